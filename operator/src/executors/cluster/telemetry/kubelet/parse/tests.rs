use super::*;

const CADVISOR: &str = include_str!("../testdata/cadvisor.txt");
const RESOURCE: &str = include_str!("../testdata/resource.txt");
const OPERATOR_ID: &str = "ddffe72bf7b30a6e415ffc9e2f11f7611518acdcc992028d0a80637669160924";

fn operator(status_id: Option<&str>) -> ContainerId {
    ContainerId::new(
        "benchmatrix-system",
        "benchmatrix-84f9d98794-nwcsd",
        "operator",
        status_id,
    )
}

#[test]
fn parses_labels_escapes_special_values_and_timestamps() {
    let s = parse_line(
        r#"m_1:x{a="q\"uote",b = "back\\slash", c="new\nline",} 8.146944e+06 1796169102351"#,
    )
    .unwrap();
    assert_eq!(s.name, "m_1:x");
    assert_eq!(s.label("a"), Some("q\"uote"));
    assert_eq!(s.label("b"), Some("back\\slash"));
    assert_eq!(s.label("c"), Some("new\nline"));
    assert_eq!(s.value, 8_146_944.0);
    assert_eq!(s.timestamp_ms, Some(1_796_169_102_351));
    let s = parse_line("up 1").unwrap();
    assert_eq!(
        (s.name, s.labels.len(), s.value, s.timestamp_ms),
        ("up", 0, 1.0, None)
    );
    assert!(parse_line("x{} NaN").unwrap().value.is_nan());
    assert_eq!(parse_line("x +Inf 5").unwrap().value, f64::INFINITY);
    assert_eq!(parse_line("x -Inf").unwrap().value, f64::NEG_INFINITY);
    assert_eq!(
        parse_line("x{l=\"}\"} 1.7961689545500276e+09")
            .unwrap()
            .value,
        1_796_168_954.550_027_6
    );
    assert_eq!(
        parse_line(r#"x{l="é,\x"} 2"#).unwrap().label("l"),
        Some("é,\\x")
    );
}

#[test]
fn skips_comments_and_garbage() {
    for bad in [
        "# HELP x y",
        "",
        "   ",
        "{a=\"b\"} 1",
        "1x 2",
        "x",
        "x{a=\"b\" 1",
        "x{a=b} 1",
        "x{a=\"unterminated} 1",
        "x 1 2 3",
        "x 1 1.5",
        "x one",
        "x inf",
        "x nan",
        "x{,} 1",
        "x{a=\"1\"\"} 1",
        "x{a=\"\\",
        "x{=\"v\"} 1",
    ] {
        assert_eq!(parse_line(bad), None, "{bad:?}");
    }
    let text = "garbage here\nok 1\n\u{0}\u{7f}{{{\nalso_ok{a=\"b\"} 2 3\n";
    let names: Vec<_> = samples(text).map(|s| s.name).collect();
    assert_eq!(names, ["ok", "also_ok"]);
}

#[test]
fn random_bytes_and_mutated_fixtures_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"{}=\",\\ \n\t#aZ_:019.e+-NaInf\xc3\xa9";
    for _ in 0..3000 {
        let len = (next() % 120) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let _ = samples(&text).count();
        let _ = cadvisor_readings(&text, &[operator(Some(OPERATOR_ID))], 0);
    }
    for _ in 0..300 {
        let mut bytes = CADVISOR.as_bytes().to_vec();
        for _ in 0..20 {
            let at = (next() % bytes.len() as u64) as usize;
            bytes[at] = next() as u8;
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = cadvisor_readings(&text, &[operator(Some(OPERATOR_ID))], 0);
    }
}

#[test]
fn cgroupfs_cadvisor_matches_the_container_by_id_never_the_pod() {
    let out = cadvisor_readings(
        CADVISOR,
        &[operator(Some(&format!("containerd://{OPERATOR_ID}")))],
        7,
    );
    assert_eq!(out.len(), 1, "{out:?}");
    let (index, r) = &out[0];
    assert_eq!(*index, 0);
    // The container's own series, not the pod cgroup's (696 periods, 1.8257 s, 8519680 B).
    assert_eq!(r.source, Source::Cadvisor);
    assert_eq!(r.at_ms, 1_796_169_102_351);
    assert_eq!(r.cfs_periods, Some(34));
    assert_eq!(r.throttled_periods, Some(0));
    assert_eq!(r.throttled_seconds, Some(0.0));
    assert_eq!(r.cpu_seconds, Some(0.055906552));
    assert_eq!(r.working_set_bytes, Some(8_146_944));
    assert_eq!(r.max_usage_bytes, Some(10_653_696));
    assert_eq!(r.cpu_limit_cores, Some(0.5));
    // Unlabelled series cannot be matched by name, and the pod's series never stand in.
    assert_eq!(cadvisor_readings(CADVISOR, &[operator(None)], 7), []);
}

#[test]
fn resource_endpoint_matches_by_labels() {
    let other = ContainerId::new(
        "benchmatrix-system",
        "benchmatrix-84f9d98794-nwcsd",
        "sidecar",
        None,
    );
    let out = resource_readings(RESOURCE, &[other, operator(None)], 7);
    assert_eq!(out.len(), 1);
    let (index, r) = &out[0];
    assert_eq!(*index, 1);
    assert_eq!(r.source, Source::Resource);
    assert_eq!(r.at_ms, 1_796_169_202_322);
    assert_eq!(r.cpu_seconds, Some(0.073738654));
    assert_eq!(r.working_set_bytes, Some(8_134_656));
    assert_eq!((r.cfs_periods, r.cpu_limit_cores), (None, None));
}

/// The systemd cgroup driver's shape: labelled series, ids ending in `cri-containerd-<id>.scope`.
const SYSTEMD: &str = include_str!("../testdata/cadvisor-systemd.txt");

#[test]
fn systemd_cadvisor_matches_by_labels_and_skips_dead_cgroups_and_per_cpu_series() {
    let web1 = ContainerId::new(
        "ns",
        "web-1",
        "app",
        Some("containerd://0123456789ab0123456789ab"),
    );
    let out = cadvisor_readings(SYSTEMD, std::slice::from_ref(&web1), 5000);
    // 1000: periods (labels) + throttled (id only); 5000: the total usage, written without a
    // timestamp. Not the pod slice (900), the dead container (77) nor cpu00 (1).
    let got: Vec<_> = out
        .iter()
        .map(|(i, r)| {
            (
                *i,
                r.at_ms,
                r.cfs_periods,
                r.throttled_periods,
                r.cpu_seconds,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 1000, Some(120), Some(30), None),
            (0, 5000, None, None, Some(2.5))
        ]
    );
    assert!(out.iter().all(|(_, r)| r.cpu_limit_cores == Some(1.5)));
    // Without the container id, labels alone decide, and the dead cgroup's reading shows up.
    let by_name = cadvisor_readings(
        SYSTEMD,
        &[ContainerId {
            container_id: None,
            ..web1
        }],
        5000,
    );
    assert_eq!(
        by_name.iter().map(|(_, r)| r.at_ms).collect::<Vec<_>>(),
        [900, 1000, 5000]
    );
}

#[test]
fn cgroup_ids() {
    assert_eq!(
        container_id_of_cgroup(&format!("/kubepods/burstable/podc11e/{OPERATOR_ID}")),
        Some(OPERATOR_ID)
    );
    assert_eq!(
        container_id_of_cgroup("/a/docker-0123456789abcdef.scope"),
        Some("0123456789abcdef")
    );
    assert_eq!(
        container_id_of_cgroup("/a/crio-0123456789abcdef.scope"),
        Some("0123456789abcdef")
    );
    assert_eq!(
        container_id_of_cgroup("/a/crio-conmon-0123456789abcdef.scope"),
        None
    );
    assert_eq!(
        container_id_of_cgroup("/kubepods/burstable/podc11e1cc6-f6ea-48b4-9089-f949468fd3d8"),
        None
    );
    assert_eq!(container_id_of_cgroup("/"), None);
    assert_eq!(
        ContainerId::new("n", "p", "c", Some("cri-o://abc"))
            .container_id
            .as_deref(),
        Some("abc")
    );
    assert_eq!(ContainerId::new("n", "p", "c", Some("")).container_id, None);
}
