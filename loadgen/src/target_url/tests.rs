use super::*;

#[test]
fn parses_hosts_ports_and_paths() {
    let u: TargetUrl = "http://127.0.0.1:8080".parse().unwrap();
    assert_eq!(
        (u.host.as_str(), u.port, u.base_path.as_str()),
        ("127.0.0.1", 8080, "")
    );
    assert_eq!(u.join("/fast"), "/fast");
    let u: TargetUrl = "http://svc.ns:81/api/".parse().unwrap();
    assert_eq!(u.join("/fast"), "/api/fast");
    assert_eq!(u.host_header(), "svc.ns:81");
    let u: TargetUrl = "http://[::1]:9000/x".parse().unwrap();
    assert_eq!((u.host.as_str(), u.port), ("::1", 9000));
    assert_eq!(u.socket_authority(), "[::1]:9000");
    assert_eq!("http://localhost".parse::<TargetUrl>().unwrap().port, 80);
}

#[test]
fn refuses_bad_urls() {
    for bad in [
        "",
        "localhost:80",
        "https://x",
        "http://",
        "http://:80",
        "http://h:0",
        "http://h:99999",
        "http://h:x",
        "http://u@h",
        "http://h/p?q=1",
        "http://h h",
    ] {
        assert!(
            bad.parse::<TargetUrl>().is_err(),
            "{bad:?} should be refused"
        );
    }
}
