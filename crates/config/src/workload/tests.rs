use super::*;
use netsched_core::rng::Rng;
use proptest::prelude::*;

fn sample_stats(s: &ServiceSampler, n: usize, seed: u64) -> (f64, Vec<usize>) {
    let mut rng = Rng::new(seed);
    let mut sum = 0.0;
    let mut counts = vec![0usize; s.classes().max(1)];
    for _ in 0..n {
        let (ns, c) = s.sample(&mut rng);
        sum += ns as f64;
        counts[c as usize] += 1;
    }
    (sum / n as f64, counts)
}

#[test]
fn preset_sample_means_match_analytic_means() {
    for (k, p) in ServicePreset::ALL.iter().enumerate() {
        let s = ServiceDist::from(*p).build().unwrap();
        let (mean, _) = sample_stats(&s, 200_000, 100 + k as u64);
        let rel = (mean - s.mean_ns()).abs() / s.mean_ns();
        assert!(rel < 0.02, "{p}: sample {mean} vs analytic {}", s.mean_ns());
    }
}

#[test]
fn preset_analytic_means() {
    let m = |p: ServicePreset| ServiceDist::from(p).build().unwrap().mean_ns();
    assert_eq!(m(ServicePreset::Exp100), 100_000.0);
    assert_eq!(m(ServicePreset::Bimodal), 275_000.0);
    assert!((m(ServicePreset::Trimodal) - 1_850_000.0).abs() < 1e-6);
    assert_eq!(m(ServicePreset::RsExp50), 50_000.0);
    assert!((m(ServicePreset::RsBimodal) - 95_000.0).abs() < 1e-6);
    assert!((m(ServicePreset::RsTrimodal) - 185_000.0).abs() < 1e-6);
    let f = (ROCKSDB_SIGMA * ROCKSDB_SIGMA / 2.0).exp();
    assert!((m(ServicePreset::Rocksdb5050) - 345_000.0 * f).abs() < 1e-6);
    assert!((m(ServicePreset::Rocksdb9010) - 101_000.0 * f).abs() < 1e-6);
    let tpcc =
        0.44 * 21_600.0 + 0.04 * 22_680.0 + 0.44 * 71_280.0 + 0.04 * 332_640.0 + 0.04 * 378_000.0;
    assert!((m(ServicePreset::Tpcc) - tpcc).abs() < 1e-6);
}

#[test]
fn class_frequencies_follow_weights() {
    let cases: [(ServicePreset, &[f64]); 4] = [
        (ServicePreset::RsBimodal, &[0.9, 0.1]),
        (ServicePreset::Trimodal, &[1.0 / 3.0; 3]),
        (ServicePreset::Rocksdb9010, &[0.9, 0.1]),
        (ServicePreset::Tpcc, &[0.44, 0.04, 0.44, 0.04, 0.04]),
    ];
    for (p, want) in cases {
        let s = ServiceDist::from(p).build().unwrap();
        assert_eq!(s.classes(), want.len());
        let n = 200_000;
        let (_, counts) = sample_stats(&s, n, 7);
        for (c, &w) in counts.iter().zip(want) {
            let f = *c as f64 / n as f64;
            assert!((f - w).abs() < 0.005, "{p}: {counts:?}");
        }
    }
    let s = ServiceDist::from(ServicePreset::Rocksdb5050)
        .build()
        .unwrap();
    assert_eq!(s.class_names(), &["get".to_string(), "scan".to_string()]);
}

#[test]
fn rocksdb_class_medians() {
    let s = ServiceDist::from(ServicePreset::Rocksdb5050)
        .build()
        .unwrap();
    let mut rng = Rng::new(3);
    let mut by_class: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..100_000 {
        let (ns, c) = s.sample(&mut rng);
        by_class[c as usize].push(ns);
    }
    for (v, want) in by_class.iter_mut().zip([40_000.0, 650_000.0]) {
        v.sort_unstable();
        let median = v[v.len() / 2] as f64;
        assert!((median / want - 1.0).abs() < 0.01, "{median} vs {want}");
    }
}

#[test]
fn exp_variance_and_fixed() {
    let s = ServiceDist::Exp { mean_us: 10.0 }.build().unwrap();
    let mut rng = Rng::new(9);
    let xs: Vec<f64> = (0..200_000).map(|_| s.sample(&mut rng).0 as f64).collect();
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
    assert!((var.sqrt() / 10_000.0 - 1.0).abs() < 0.02);
    let f = ServiceDist::Fixed { value_us: 2.5 }.build().unwrap();
    assert_eq!(f.sample(&mut rng), (2_500, 0));
    assert_eq!(f.mean_ns(), 2_500.0);
}

#[test]
fn invalid_distributions_name_the_field() {
    let e = ServiceDist::Exp { mean_us: 0.0 }.validate().unwrap_err();
    assert_eq!(e.field, "workload.service.mean_us");
    let e = ServiceDist::Mix {
        values_us: vec![1.0, 2.0],
        weights: vec![1.0],
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "workload.service.weights");
    let e = ServiceDist::Mix {
        values_us: vec![1.0, 2.0],
        weights: vec![1.0, -1.0],
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "workload.service.weights[1]");
    let e = ServiceDist::Mix {
        values_us: vec![1.0, 2.0],
        weights: vec![0.0, 0.0],
    }
    .validate()
    .unwrap_err();
    assert!(e.to_string().contains("sum"), "{e}");
    let e = ServiceDist::Mix {
        values_us: vec![],
        weights: vec![],
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "workload.service.values_us");
    let e = ServiceDist::Lognormal {
        median_us: 40.0,
        sigma: f64::NAN,
    }
    .validate_at("x")
    .unwrap_err();
    assert_eq!(e.field, "x.sigma");
    let missing = ServiceDist::Trace {
        path: "/nonexistent/trace.csv".into(),
    };
    assert!(missing.validate().is_ok(), "files are read at build time");
    let e = missing.build().unwrap_err();
    assert_eq!(e.field, "workload.service.path");
    assert!(e.msg.contains("cannot read"), "{e}");
    let e = ServiceDist::Trace { path: "".into() }
        .validate()
        .unwrap_err();
    assert_eq!(e.field, "workload.service.path");
    let e = "nope".parse::<ServicePreset>().unwrap_err();
    assert!(e.msg.contains("rocksdb-90-10"), "{e}");
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrap {
    service: ServiceDist,
}

#[test]
fn toml_shapes() {
    let w: Wrap = toml::from_str("service = { kind = \"exp\", mean_us = 100 }").unwrap();
    assert_eq!(w.service, ServiceDist::Exp { mean_us: 100.0 });
    let w: Wrap = toml::from_str(
            "service = { kind = \"lognormal-mix\", medians_us = [40, 650], sigma = 0.1, weights = [9, 1] }",
        )
        .unwrap();
    assert_eq!(w.service.build().unwrap().classes(), 2);
    let w: Wrap =
        toml::from_str("service = { kind = \"preset\", name = \"rs-bimodal-50-50\" }").unwrap();
    assert_eq!(w.service, ServicePreset::RsBimodal5050.into());
    let w: Wrap =
        toml::from_str("[service]\nkind = \"mix\"\nvalues_us = [50, 500]\nweights = [0.9, 0.1]\n")
            .unwrap();
    assert!((w.service.build().unwrap().mean_ns() - 95_000.0).abs() < 1e-6);
    assert!(toml::from_str::<Wrap>("service = { kind = \"exp\", mean = 100 }").is_err());
    assert!(toml::from_str::<Wrap>("service = { kind = \"gamma\", mean_us = 100 }").is_err());
    assert!(toml::from_str::<Wrap>("service = { kind = \"preset\", name = \"exp\" }").is_err());
    // Round trip through TOML.
    for p in ServicePreset::ALL {
        let w = Wrap { service: p.dist() };
        #[derive(Serialize)]
        struct Out<'a> {
            service: &'a ServiceDist,
        }
        let text = toml::to_string(&Out {
            service: &w.service,
        })
        .unwrap();
        let back: Wrap = toml::from_str(&text).unwrap();
        assert_eq!(back.service, w.service);
    }
}

#[test]
fn trace_parsing() {
    let t = parse_trace("service_time_us\n10\n20.5\n\n# comment\n30\n").unwrap();
    assert_eq!(t.service_ns, vec![10_000, 20_500, 30_000]);
    assert!(t.classes.is_empty());
    let t = parse_trace("5\n6\n").unwrap();
    assert_eq!(t.service_ns, vec![5_000, 6_000]);
    let t = parse_trace("type,class,service_time_us\nGET,0,40\nSCAN,1,650\n").unwrap();
    assert_eq!(t.service_ns, vec![40_000, 650_000]);
    assert_eq!(t.classes, vec![0, 1]);
    let t = parse_trace("op,latency\nGET,40\n").unwrap();
    assert_eq!(t.service_ns, vec![40_000]);
    let e = parse_trace("service_time_us\n10\nabc\n").unwrap_err();
    assert_eq!(e.to_string(), "line 3: service time 'abc' is not a number");
    let e = parse_trace("a,service_time_us\n1,2\n3\n").unwrap_err();
    assert_eq!(
        e,
        TraceRowError::MissingColumn {
            line: 3,
            column: 2,
            fields: 1
        }
    );
    assert_eq!(e.to_string(), "line 3: missing column 2 (has 1 fields)");
    let e = parse_trace("service_time_us\n-1\n").unwrap_err();
    assert!(e.to_string().starts_with("line 2:"), "{e}");
    let e = parse_trace("service_time_us,class\n1,300\n").unwrap_err();
    assert!(e.to_string().starts_with("line 2: class"), "{e}");
    assert_eq!(parse_trace("service_time_us\n"), Err(TraceRowError::Empty));
}

#[test]
fn trace_file_sampling() {
    let dir = std::env::temp_dir().join(format!("netsched-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.csv"), "service_time_us,class\n10,0\n30,1\n").unwrap();
    let d = ServiceDist::Trace {
        path: "t.csv".into(),
    };
    let s = d.build_relative_to(&dir).unwrap();
    assert_eq!(s.mean_ns(), 20_000.0);
    assert_eq!(s.classes(), 2);
    let mut rng = Rng::new(1);
    for _ in 0..100 {
        let (ns, c) = s.sample(&mut rng);
        assert!(matches!((ns, c), (10_000, 0) | (30_000, 1)));
    }
    let (mean, _) = sample_stats(&s, 100_000, 5);
    assert!((mean / 20_000.0 - 1.0).abs() < 0.01);
    std::fs::write(dir.join("bad.csv"), "1\n2\nx\n").unwrap();
    let e = ServiceDist::Trace {
        path: dir.join("bad.csv"),
    }
    .build()
    .unwrap_err();
    assert!(
        e.msg
            .ends_with("bad.csv: line 3: service time 'x' is not a number"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Counts in disjoint windows of length `len` starting at `from`.
fn window_counts(
    p: &mut ArrivalProcess,
    rng: &mut Rng,
    from: u64,
    len: u64,
    windows: usize,
) -> Vec<u64> {
    let mut counts = vec![0u64; windows];
    let end = from + len * windows as u64;
    let mut t = from;
    while let Some(a) = p.next_arrival(t, rng) {
        if a >= end {
            break;
        }
        counts[((a - from) / len) as usize] += 1;
        t = a;
    }
    counts
}

fn mean_var(xs: &[u64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<u64>() as f64 / n;
    let v = xs.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v)
}

#[test]
fn poisson_counts_mean_and_variance() {
    // λ = 0.8 · 10 workers / 100 µs = 8e-5 per ns; windows of 1.25 ms → λT = 100.
    let mut p = ArrivalProcess::new(&RateSchedule::constant(0.8), 10, 100_000.0).unwrap();
    let mut rng = Rng::new(42);
    let counts = window_counts(&mut p, &mut rng, 0, 1_250_000, 4000);
    let (m, v) = mean_var(&counts);
    assert!((m / 100.0 - 1.0).abs() < 0.02, "mean {m}");
    assert!((v / 100.0 - 1.0).abs() < 0.1, "variance {v}");
}

#[test]
fn high_rate_is_not_biased_by_rounding() {
    // 0.5 arrivals per ns: rounding each gap to whole ns would distort this.
    let mut p = ArrivalProcess::with_rates(&[(0, 0.5)]).unwrap();
    let mut rng = Rng::new(8);
    let counts = window_counts(&mut p, &mut rng, 0, 1_000, 200);
    let (m, v) = mean_var(&counts);
    assert!((m / 500.0 - 1.0).abs() < 0.01, "mean {m}");
    assert!((v / 500.0 - 1.0).abs() < 0.25, "variance {v}");
}

#[test]
fn schedule_switches_rate() {
    // Horus §4.2-like: load steps up, pauses, then resumes.
    let sched = RateSchedule {
        segments: vec![
            RateSegment {
                start_ns: 0,
                load: 0.2,
            },
            RateSegment {
                start_ns: 100_000_000,
                load: 0.9,
            },
            RateSegment {
                start_ns: 200_000_000,
                load: 0.0,
            },
            RateSegment {
                start_ns: 300_000_000,
                load: 0.5,
            },
        ],
    };
    let mut p = ArrivalProcess::new(&sched, 8, 50_000.0).unwrap();
    assert_eq!(p.rate_at(150_000_000), 0.9 * 8.0 / 50_000.0);
    let mut rng = Rng::new(11);
    let counts = window_counts(&mut p, &mut rng, 0, 100_000_000, 4);
    let want = [0.2, 0.9, 0.0, 0.5].map(|l| l * 8.0 / 50_000.0 * 1e8);
    for (c, w) in counts.iter().zip(want) {
        if w == 0.0 {
            assert_eq!(*c, 0);
        } else {
            assert!((*c as f64 / w - 1.0).abs() < 0.02, "{counts:?} vs {want:?}");
        }
    }
    // From inside the paused segment the next arrival is after it ends.
    let a = p.next_arrival(250_000_000, &mut rng).unwrap();
    assert!(a >= 300_000_000);
    assert_eq!(sched.load_at(250_000_000), 0.0);
}

#[test]
fn zero_final_rate_ends_arrivals() {
    let mut p = ArrivalProcess::with_rates(&[(0, 1e-3), (1_000_000, 0.0)]).unwrap();
    let mut rng = Rng::new(2);
    let mut t = 0;
    let mut n = 0;
    while let Some(a) = p.next_arrival(t, &mut rng) {
        assert!(a <= 1_000_000);
        t = a;
        n += 1;
    }
    assert!((900..1100).contains(&n), "{n}");
    assert_eq!(p.next_arrival(5_000_000, &mut rng), None);
}

#[test]
fn schedule_validation_and_pairs() {
    let s = RateSchedule::from_us_pairs(0.5, &[[0.0, 0.3], [10.0, 0.9]]).unwrap();
    assert_eq!(
        s.segments,
        vec![
            RateSegment {
                start_ns: 0,
                load: 0.3
            },
            RateSegment {
                start_ns: 10_000,
                load: 0.9
            }
        ]
    );
    assert!(RateSchedule::from_us_pairs(0.5, &[[10.0, 0.3], [5.0, 0.9]]).is_err());
    let e = RateSchedule {
        segments: vec![RateSegment {
            start_ns: 5,
            load: 0.5,
        }],
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "segments[0].start_ns");
    assert!(RateSchedule { segments: vec![] }.validate().is_err());
    assert!(RateSchedule::constant(f64::NAN).validate().is_err());
    assert!(ArrivalProcess::new(&RateSchedule::constant(0.5), 0, 1.0).is_err());
    let w: RateSchedule = toml::from_str(
        "segments = [{ start_ns = 0, load = 0.3 }, { start_ns = 1_000, load = 0.5 }]",
    )
    .unwrap();
    assert_eq!(w.load_at(999), 0.3);
    assert_eq!(w.load_at(1_000), 0.5);
}

proptest! {
    #[test]
    fn arrivals_are_monotone_and_respect_paused_segments(
        seed in any::<u64>(),
        loads in proptest::collection::vec(0.0f64..2.0, 1..5),
        seg_len in 1_000u64..200_000,
    ) {
        let segments: Vec<RateSegment> = loads.iter().enumerate()
            .map(|(i, &l)| RateSegment { start_ns: i as u64 * seg_len, load: if l < 0.3 { 0.0 } else { l } })
            .collect();
        let sched = RateSchedule { segments: segments.clone() };
        let mut p = ArrivalProcess::new(&sched, 16, 10_000.0).unwrap();
        let mut rng = Rng::new(seed);
        let mut t = 0;
        for _ in 0..2_000 {
            match p.next_arrival(t, &mut rng) {
                Some(a) => {
                    prop_assert!(a >= t);
                    // No arrival strictly inside a paused segment (an arrival
                    // may round onto the instant a pause starts).
                    let i = segments.partition_point(|s| s.start_ns <= a) - 1;
                    if segments[i].load == 0.0 {
                        prop_assert_eq!(a, segments[i].start_ns);
                    }
                    t = a;
                }
                None => {
                    prop_assert_eq!(segments.last().unwrap().load, 0.0);
                    break;
                }
            }
        }
    }
}
