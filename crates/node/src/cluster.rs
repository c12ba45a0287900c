//! An in-process local cluster on loopback: one spine, `racks` leaves with
//! `executors` executors each (one worker agent per rack), every component on
//! its own thread and real UDP socket. For tests, quick experiments
//! (`netsched cluster`) and, later, runtime-vs-simulator comparisons.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::config::{ConfigError, Policy, PoolConfig, Role};
use crate::error::Error;
use crate::metrics::Registry;
use crate::{SwitchConfig, SwitchDaemon, Worker, WorkerConfig};

/// Shape of a local cluster.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    pub pool: u16,
    pub racks: usize,
    pub executors: usize,
    /// Policy of the spine and of the leaves (RS-LB: random spine, RackSched
    /// leaves).
    pub spine_policy: Policy,
    pub leaf_policy: Policy,
    pub seed: u64,
    /// Executors' keep-alive period; leaves time workers out after 10×.
    pub heartbeat_ms: u64,
    pub spin_us: u64,
    /// The cluster key (64 hex digits) every daemon and worker holds: with
    /// it, notices and keep-alives are sealed (crate::notice_auth).
    pub key: Option<String>,
    /// Horus soft state, ms (`PoolConfig::soft_state_ms`; 0: off).
    pub soft_state_ms: u64,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            pool: 1,
            racks: 2,
            executors: 2,
            spine_policy: Policy::Horus,
            leaf_policy: Policy::Horus,
            seed: 1,
            heartbeat_ms: 100,
            spin_us: 20,
            key: None,
            soft_state_ms: crate::config::DEFAULT_SOFT_STATE_MS,
        }
    }
}

/// A running local cluster; [`shutdown`](Self::shutdown) stops and joins it.
pub struct LocalCluster {
    pub stop: Arc<AtomicBool>,
    /// Where clients submit.
    pub spine: SocketAddr,
    pub spine_metrics: Arc<Registry>,
    pub leaf_metrics: Vec<Arc<Registry>>,
    pub worker_metrics: Vec<Arc<Registry>>,
    /// The leaves' addresses, rack by rack.
    pub leaves: Vec<SocketAddr>,
    /// A second handle on each leaf's socket: what a test sends on it has the
    /// leaf's source address (a forger on its path, without raw sockets).
    pub leaf_sockets: Vec<UdpSocket>,
    daemons: Vec<JoinHandle<Result<(), Error>>>,
    workers: Vec<Worker>,
}

fn loopback() -> Result<UdpSocket, Error> {
    Ok(UdpSocket::bind("127.0.0.1:0")?)
}

fn addr(s: &UdpSocket) -> Result<SocketAddr, Error> {
    Ok(s.local_addr()?)
}

impl LocalCluster {
    pub fn start(spec: &ClusterSpec) -> Result<Self, Error> {
        if spec.racks == 0 || spec.executors == 0 {
            return Err(ConfigError::Invalid(
                "a cluster needs at least one rack and one executor".into(),
            )
            .into());
        }
        let stop = Arc::new(AtomicBool::new(false));
        // Bind everything first, so each config can name its neighbours.
        let spine_sock = loopback()?;
        let spine = addr(&spine_sock)?;
        let leaf_socks = (0..spec.racks)
            .map(|_| loopback())
            .collect::<Result<Vec<_>, _>>()?;
        let leaf_addrs = leaf_socks.iter().map(addr).collect::<Result<Vec<_>, _>>()?;
        let spawn = |mut d: SwitchDaemon, stop: Arc<AtomicBool>| {
            std::thread::Builder::new()
                .name("switch".into())
                .spawn(move || d.run(&stop).map_err(Error::from))
        };
        let key = spec.key.clone().map(crate::secret::Secret::new);
        let leaf_sockets = leaf_socks
            .iter()
            .map(|s| s.try_clone())
            .collect::<Result<Vec<_>, _>>()?;
        let spine_cfg = SwitchConfig {
            listen: spine.to_string(),
            metrics: None,
            seed: spec.seed,
            batch: 32,
            fail_replies: true,
            instances: vec![PoolConfig {
                rack_workers: vec![spec.executors as u32; spec.racks],
                soft_state_ms: spec.soft_state_ms,
                ..PoolConfig::new(
                    spec.pool,
                    Role::Spine,
                    spec.spine_policy,
                    leaf_addrs.clone(),
                )
            }],
            key: key.clone(),
            ..Default::default()
        };
        let d = SwitchDaemon::new(&spine_cfg, spine_sock)?;
        let spine_metrics = d.registry();
        let mut daemons = vec![spawn(d, stop.clone())?];
        let mut leaf_metrics = Vec::new();
        let mut workers = Vec::new();
        let mut worker_metrics = Vec::new();
        for (r, ls) in leaf_socks.into_iter().enumerate() {
            let es = (0..spec.executors)
                .map(|_| loopback())
                .collect::<Result<Vec<_>, _>>()?;
            let exec_addrs = es.iter().map(addr).collect::<Result<Vec<_>, _>>()?;
            let cfg = SwitchConfig {
                listen: leaf_addrs[r].to_string(),
                metrics: None,
                seed: spec.seed.wrapping_add(1 + r as u64),
                batch: 32,
                fail_replies: true,
                instances: vec![PoolConfig {
                    upstream: vec![spine],
                    rack: r as u16,
                    heartbeat_timeout_ms: spec.heartbeat_ms * 10,
                    soft_state_ms: spec.soft_state_ms,
                    ..PoolConfig::new(spec.pool, Role::Leaf, spec.leaf_policy, exec_addrs.clone())
                }],
                key: key.clone(),
                ..Default::default()
            };
            let d = SwitchDaemon::new(&cfg, ls)?;
            leaf_metrics.push(d.registry());
            daemons.push(spawn(d, stop.clone())?);
            let wcfg = WorkerConfig {
                listen: exec_addrs.iter().map(|a| a.to_string()).collect(),
                first_id: 0,
                leaf: Some(leaf_addrs[r]),
                pool: spec.pool,
                heartbeat_ms: spec.heartbeat_ms,
                spin_us: spec.spin_us,
                metrics: None,
                key: key.clone(),
                ..Default::default()
            };
            let w = Worker::start(&wcfg, es, stop.clone())?;
            worker_metrics.push(w.registry());
            workers.push(w);
        }
        Ok(LocalCluster {
            stop,
            spine,
            spine_metrics,
            leaf_metrics,
            worker_metrics,
            leaves: leaf_addrs,
            leaf_sockets,
            daemons,
            workers,
        })
    }

    /// Stops every thread and waits for it; the first daemon error, if any.
    pub fn shutdown(self) -> Result<(), Error> {
        self.stop.store(true, Ordering::Relaxed);
        let mut first = Ok(());
        for d in self.daemons {
            let r = d.join().unwrap_or(Err(Error::Panicked { what: "daemon" }));
            if first.is_ok() {
                first = r;
            }
        }
        for w in self.workers {
            w.join();
        }
        first
    }
}
