use super::*;

#[test]
fn parses_and_prints_the_usual_forms() {
    for (text, ms, canonical) in [
        ("500ms", 500, "500ms"),
        ("15s", 15_000, "15s"),
        ("2m", 120_000, "2m"),
        ("1m30s", 90_000, "1m30s"),
        ("90s", 90_000, "1m30s"),
        ("1h", 3_600_000, "1h"),
        ("0s", 0, "0s"),
        ("1s500ms", 1_500, "1s500ms"),
    ] {
        let d: Duration = text.parse().unwrap();
        assert_eq!(d.0.as_millis(), ms, "{text}");
        assert_eq!(d.to_string(), canonical, "{text}");
    }
}

#[test]
fn refuses_what_the_pattern_refuses() {
    for bad in [
        "",
        "15",
        "s",
        "1.5s",
        "10 s",
        "-1s",
        "3d",
        "1m30",
        "99999999999999999999h",
    ] {
        assert!(
            bad.parse::<Duration>().is_err(),
            "{bad:?} should be refused"
        );
    }
}

#[test]
fn durations_beyond_the_ceiling_are_refused_naming_it() {
    for long in [
        "99999999999h",
        "8761h",
        "99999999999999999999999999999999999999999h",
    ] {
        let err = long.parse::<Duration>().unwrap_err().to_string();
        assert!(err.contains("8760h"), "{long}: {err}");
    }
    assert_eq!("8760h".parse::<Duration>().unwrap(), MAX_ANY_DURATION);
}

#[test]
fn serde_round_trip_is_a_string() {
    let d = Duration::from_millis(61_250);
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(json, "\"1m1s250ms\"");
    assert_eq!(serde_json::from_str::<Duration>(&json).unwrap(), d);
    assert!(serde_json::from_str::<Duration>("15").is_err());
}
