//! What every netsched configuration shares, so that the simulators
//! (`netsched-sim`, `netsched-flowsim`) and the runtime (`netsched-node`)
//! depend on it and not on each other:
//!
//! - [`ConfigError`]: one line naming the offending field;
//! - [`parse`]: TOML parse errors located by dotted key and line;
//! - [`workload`]: service-time distributions and their samplers, traces,
//!   and Poisson arrivals (Horus §4.1, §5.1; RackSched §4.1);
//! - [`sweep`]: expansion of `[sweep]` into (policy, load) runs;
//! - [`pull`]: the pull scheduling policy names and scheduler sections
//!   (Draconis §4-§6, R2P2, Sparrow);
//! - [`horus`]: Horus's mechanism choices (`preset` and every option);
//! - [`ns`]: microsecond/nanosecond conversions.
//!
//! Limits a data plane refuses at build time are `netsched_core::limits`;
//! the loaders here and in each driver turn them into [`ConfigError`]s.

pub mod build_info;
pub mod error;
pub mod horus;
pub mod ns;
pub mod parse;
pub mod pull;
pub mod sweep;
pub mod workload;

pub use error::ConfigError;
pub use sweep::Sweep;
