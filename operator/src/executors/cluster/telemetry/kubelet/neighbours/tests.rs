use super::*;

/// One `/metrics/resource` body at `t` seconds, as the kubelet writes it: the node's counter
/// and each pod's (`(namespace/name, core-seconds)`), the node's stamped `node_lag` s earlier
/// than the pods'.
fn body(t: f64, node: f64, node_lag: f64, pods: &[(&str, f64)]) -> String {
    let ms = |t: f64| (t * 1000.0).round() as i64;
    let mut o = String::from(
        "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds\n\
         # TYPE node_cpu_usage_seconds_total counter\n",
    );
    o.push_str(&format!(
        "node_cpu_usage_seconds_total {node} {}\n",
        ms(t - node_lag)
    ));
    o.push_str("# TYPE pod_cpu_usage_seconds_total counter\n");
    for (pod, v) in pods {
        let (ns, name) = pod.split_once('/').unwrap();
        o.push_str(&format!(
            "pod_cpu_usage_seconds_total{{namespace=\"{ns}\",pod=\"{name}\"}} {v} {}\n",
            ms(t)
        ));
        o.push_str(&format!(
            "container_cpu_usage_seconds_total{{container=\"c\",namespace=\"{ns}\",pod=\"{name}\"}} {v} {}\n",
            ms(t)
        ));
    }
    o
}

fn window(start: f64, end: f64) -> Window {
    Window {
        start_ms: (start * 1000.0) as i64,
        end_ms: (end * 1000.0) as i64,
    }
}

/// The own pods of the measurement in these tests.
fn own() -> Vec<String> {
    vec!["bench/run-a-1-target-x".into(), "bench/run-a-1-lg-0".into()]
}

/// A node sampled every second from 0 to `until` s: the target at 0.5 CPU, its load generator
/// at 0.2, a busy neighbour at 0.6, a quiet one at 0.01 and the system at 0.05; plus the idle pods
/// `extra` adds at each second.
fn node(until: u32, extra: impl Fn(f64) -> Vec<(&'static str, f64)>) -> NodeSamples {
    let mut s = NodeSamples::default();
    for i in 0..=until {
        let t = f64::from(i);
        let mut pods = vec![
            ("bench/run-a-1-target-x", 100.0 + 0.5 * t),
            ("bench/run-a-1-lg-0", 0.2 * t),
            ("other/busy", 5000.0 + 0.6 * t),
            ("kube-system/quiet", 7.0 + 0.01 * t),
        ];
        pods.extend(extra(t));
        let node = 90_000.0 + (0.5 + 0.2 + 0.6 + 0.01 + 0.05) * t;
        s.push(node_scrape(&body(t, node, 0.0, &pods), 0));
    }
    s
}

#[test]
fn a_busy_neighbour_at_0_6_cpu_is_0_6_foreign_and_flagged_at_250m() {
    let s = node(20, |_| Vec::new());
    let mut n = neighbours("n1", &s, window(5.0, 15.0), &own());
    // 0.6 (busy) + 0.01 (quiet) + 0.05 (the system); the own 0.7 is left out.
    assert_eq!(n.foreign_cpu, Some(0.66), "{n:?}");
    assert_eq!(n.window_seconds, Some(10.0));
    assert_eq!(n.missing, None);
    let listed: Vec<(&str, f64)> = n.pods.iter().map(|p| (p.pod.as_str(), p.cpu)).collect();
    assert_eq!(listed, [("other/busy", 0.6), ("kube-system/quiet", 0.01)]);
    assert_eq!(n.more_pods, None);
    flag(std::slice::from_mut(&mut n), 0.25);
    assert!(n.busy);
    assert_eq!(
        n.busy_words(),
        "node n1: 0.660 CPU of other use, most by other/busy (0.600)"
    );
    flag(std::slice::from_mut(&mut n), 1.0);
    assert!(!n.busy, "not above a 1-CPU limit");
}

#[test]
fn the_own_pods_are_left_out_whatever_they_use() {
    // Without the busy neighbour: the own pods' 0.7 CPU is not foreign.
    let mut s = NodeSamples::default();
    for i in 0..=10 {
        let t = f64::from(i);
        let pods = [
            ("bench/run-a-1-target-x", 0.5 * t),
            ("bench/run-a-1-lg-0", 0.2 * t),
        ];
        s.push(node_scrape(&body(t, 1.0 + 0.72 * t, 0.0, &pods), 0));
    }
    let mut n = neighbours("n1", &s, window(2.0, 8.0), &own());
    assert_eq!(n.foreign_cpu, Some(0.02), "{n:?}");
    assert!(n.pods.is_empty());
    flag(std::slice::from_mut(&mut n), 0.25);
    assert!(!n.busy);
    // Without knowing they are its own, they are the neighbours.
    let n = neighbours("n1", &s, window(2.0, 8.0), &[]);
    assert_eq!(n.foreign_cpu, Some(0.72));
    assert_eq!(n.pods[0].pod, "bench/run-a-1-target-x");
}

#[test]
fn a_pod_that_starts_mid_window_counts_from_zero() {
    // A pod appears at 10 s, already at 0.3 core-s (its start-up), then runs 1 CPU; the node
    // counter grows by the same.
    let mut s = NodeSamples::default();
    for i in 0..=20 {
        let t = f64::from(i);
        let mut pods = vec![("bench/run-a-1-target-x", 0.5 * t)];
        let late = if t >= 10.0 { 0.3 + (t - 10.0) } else { 0.0 };
        if t >= 10.0 {
            pods.push(("other/late", late));
        }
        let node = 500.0 + 0.5 * t + late;
        s.push(node_scrape(&body(t, node, 0.0, &pods), 0));
    }
    let n = neighbours("n1", &s, window(5.0, 15.0), &own());
    // 0.3 + 5 core-seconds over 10 s.
    assert_eq!(n.foreign_cpu, Some(0.53), "{n:?}");
    assert_eq!(n.pods[0].pod, "other/late");
    assert_eq!(n.pods[0].cpu, 0.53);
    // A pod that ended before the window is not a neighbour.
    let n = neighbours("n1", &s, window(0.0, 4.0), &own());
    assert_eq!(n.foreign_cpu, Some(0.0));
    assert!(n.pods.is_empty(), "{n:?}");
}

#[test]
fn a_pod_counter_that_resets_counts_from_zero_again() {
    let mut series = Series::new();
    // 1 core-s a second up to 6 s (value 16), made anew between 6 and 7 s, then 1 a second.
    for i in 0..=12 {
        let t = i * 1000;
        let v = if i <= 6 {
            10.0 + i as f64
        } else {
            (i - 6) as f64 - 0.5
        };
        series.push_back((t, v));
    }
    // 3.5 to 6 s: 2.5; 6 to 7: 0.5 after the reset; 7 to 9.5: 2.5.
    let grew = pod_growth(&series, window(3.5, 9.5), false);
    assert!((grew - 5.5).abs() < 1e-9, "{grew}");
    // A window ending inside the reset's interval keeps the old counter's value.
    let grew = pod_growth(&series, window(3.5, 6.5), false);
    assert!((grew - 2.5).abs() < 1e-9, "{grew}");
}

#[test]
fn a_node_counter_reset_or_samples_short_of_the_window_give_a_reason() {
    let mut s = node(10, |_| Vec::new());
    s.push(NodeScrape {
        node: Some((5500, 1.0)),
        pods: Vec::new(),
    });
    let n = neighbours("n1", &s, window(2.0, 8.0), &own());
    assert_eq!(n.foreign_cpu, None);
    assert_eq!(
        n.missing.as_deref(),
        Some("the node's CPU counter went down (the node restarted)")
    );

    let s = node(10, |_| Vec::new());
    let n = neighbours("n1", &s, window(10.5, 30.0), &own());
    assert_eq!(
        n.missing.as_deref(),
        Some(
            "the node's CPU samples (refreshed by the kubelet every 10-15 s) cover 0.0 s of the \
             19.5 s of measured phases"
        )
    );
    // Two seconds of the phases: an estimate over them.
    let n = neighbours("n1", &s, window(8.0, 30.0), &own());
    assert_eq!((n.foreign_cpu, n.window_seconds), (Some(0.66), Some(2.0)));
    let n = neighbours("n1", &NodeSamples::default(), window(1.0, 2.0), &own());
    assert_eq!(
        n.missing.as_deref(),
        Some("no node CPU samples from /metrics/resource")
    );
}

#[test]
fn a_node_stamped_seconds_behind_its_pods_is_measured_over_what_it_covers() {
    // The node's stats 4 s older than the pods' (as a real kubelet's were): the last scrape,
    // at 20 s, has the node at 16 s; the phases end at 18 s.
    let mut s = NodeSamples::default();
    for i in 0..=20 {
        let t = f64::from(i);
        let pods = [("bench/run-a-1-target-x", 0.5 * t), ("other/busy", 0.6 * t)];
        let node_t = t - 4.0;
        s.push(node_scrape(&body(t, 1.1 * node_t, 4.0, &pods), 0));
    }
    let n = neighbours("n1", &s, window(6.0, 18.0), &own());
    assert_eq!(n.window_seconds, Some(10.0), "6 to 16 s: {n:?}");
    assert_eq!(n.foreign_cpu, Some(0.6));
}

#[test]
fn node_samples_10_s_apart_around_a_load_that_starts_between_them_give_the_steady_foreign_use() {
    // The node's figure refreshed at -3, 7, 17 and 27 s; the pods' every second from 0 s. The
    // load starts at 2 s (target 0.5 CPU, and its load generator, new then, 0.4), the measured
    // phases run from 4 to 16 s; someone else uses 0.1 CPU throughout. Interpolating the node
    // counter at 4 s would spread the load over -3 to 7 s and find no foreign use at all.
    let loaded = |t: f64| (t - 2.0).max(0.0);
    let mut s = NodeSamples::default();
    for i in 0..=25 {
        let t = f64::from(i);
        let mut pods = vec![
            ("bench/run-a-1-target-x", 100.0 + 0.5 * loaded(t)),
            ("other/x", 0.1 * (t + 3.0)),
        ];
        if t >= 2.0 {
            pods.push(("bench/run-a-1-lg-0", 0.4 * loaded(t)));
        }
        let ms = |t: f64| (t * 1000.0) as i64;
        let node_t = [-3.0, 7.0, 17.0, 27.0]
            .into_iter()
            .rev()
            .find(|n| *n <= t)
            .unwrap_or(-3.0);
        let mut scrape = node_scrape(&body(t, 0.0, 0.0, &pods), 0);
        scrape.node = Some((ms(node_t), 1000.0 + 0.1 * node_t + 0.9 * loaded(node_t)));
        s.push(scrape);
    }
    let n = neighbours("n1", &s, window(4.0, 16.0), &own());
    assert_eq!(n.window_seconds, Some(20.0), "-3 to 17 s: {n:?}");
    assert_eq!(n.foreign_cpu, Some(0.1), "{n:?}");
    assert_eq!(n.pods[0].pod, "other/x");
}

#[test]
fn only_three_pods_are_listed_and_the_rest_counted() {
    let s = node(10, |_| {
        vec![
            ("a/one", 0.0),
            ("a/two", 0.0),
            ("a/three", 0.0),
            ("a/four", 0.0),
        ]
    });
    let n = neighbours("n1", &s, window(2.0, 8.0), &own());
    assert_eq!(n.pods.len(), LISTED_PODS);
    assert_eq!(n.pods[0].pod, "other/busy");
    assert_eq!(n.more_pods, Some(3));
}

#[test]
fn the_node_and_pod_series_are_read_from_a_real_kubelets_answer() {
    let text = include_str!("../testdata/resource.txt");
    let scrape = node_scrape(text, 0);
    assert_eq!(scrape.node, Some((1796169193362, 13726.474363667)));
    assert_eq!(
        scrape.pods,
        [(
            "benchmatrix-system/benchmatrix-84f9d98794-nwcsd".to_owned(),
            1796169198668,
            1.842935825
        )]
    );
}

#[test]
fn long_series_are_thinned_keeping_their_ends() {
    let mut s = Series::new();
    for i in 0..(MAX_SERIES_POINTS as i64 + 1) {
        add(&mut s, (i, i as f64));
    }
    assert!(s.len() <= MAX_SERIES_POINTS / 2 + 1, "{}", s.len());
    assert_eq!(s.front(), Some(&(0, 0.0)));
    assert_eq!(
        s.back(),
        Some(&(MAX_SERIES_POINTS as i64, MAX_SERIES_POINTS as f64))
    );
    add(&mut s, (5, 5.0));
    add(&mut s, (5, 99.0));
    assert_eq!(s.iter().filter(|p| p.0 == 5).count(), 1);
}
