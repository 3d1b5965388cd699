use super::*;
use crate::plan::{Header, HeaderValueFrom};

fn endpoint(method: Option<&str>, headers: Vec<Header>, body: Option<&str>) -> Endpoint {
    Endpoint {
        name: "e".into(),
        path: "/orders".into(),
        method: method.map(Into::into),
        headers,
        body: body.map(Into::into),
        success_codes: None,
    }
}

fn literal(name: &str, value: &str) -> Header {
    Header {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn text(p: &Prepared) -> String {
    String::from_utf8(p.bytes.clone()).unwrap()
}

#[test]
fn a_plain_get_is_the_request_it_always_was() {
    let p = build(
        "h:1",
        "/fast",
        &endpoint(None, vec![], None),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(
        text(&p),
        "GET /fast HTTP/1.1\r\nHost: h:1\r\nUser-Agent: benchmatrix-loadgen\r\nAccept: */*\r\n\r\n"
    );
    assert!(!p.bodiless_answer);
    assert_eq!(p.success, SuccessSet::DEFAULT);
}

#[test]
fn a_post_carries_its_headers_in_order_and_its_body_with_its_length() {
    let body = "{\"item\":\"é\"}";
    let e = endpoint(
        Some("POST"),
        vec![
            literal("Content-Type", "application/json"),
            literal("User-Agent", "mine/1"),
            Header {
                name: "Authorization".into(),
                value: None,
                value_from: Some(HeaderValueFrom {
                    secret_key_ref: None,
                    env: Some("TOKEN".into()),
                }),
            },
        ],
        Some(body),
    );
    let mut values = HeaderValues::default();
    values.insert("TOKEN", "Bearer s3cret");
    let p = build("h:1", "/orders", &e, &values).unwrap();
    assert_eq!(
        text(&p),
        format!(
            "POST /orders HTTP/1.1\r\nHost: h:1\r\nAccept: */*\r\nContent-Type: application/json\r\nUser-Agent: mine/1\r\nAuthorization: Bearer s3cret\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    );
    // The length counts bytes, not characters: é is two.
    assert!(text(&p).contains("Content-Length: 13\r\n"));
    assert_eq!(body.chars().count(), 12);
    // Without the value, nothing is built.
    assert!(build("h:1", "/orders", &e, &Default::default()).is_err());
}

#[test]
fn methods_with_content_and_no_body_say_so_and_head_answers_have_no_body() {
    let p = build(
        "h",
        "/",
        &endpoint(Some("PUT"), vec![], None),
        &Default::default(),
    )
    .unwrap();
    assert!(
        text(&p).ends_with("Content-Length: 0\r\n\r\n"),
        "{}",
        text(&p)
    );
    // Methods that define no content send no length either.
    for m in ["DELETE", "OPTIONS"] {
        let p = build(
            "h",
            "/",
            &endpoint(Some(m), vec![], None),
            &Default::default(),
        )
        .unwrap();
        assert!(!text(&p).contains("Content-Length"), "{}", text(&p));
    }
    let p = build(
        "h",
        "/",
        &endpoint(Some("HEAD"), vec![], None),
        &Default::default(),
    )
    .unwrap();
    assert!(!text(&p).contains("Content-Length"), "{}", text(&p));
    assert!(p.bodiless_answer);
}

#[test]
fn values_from_the_environment_are_read_cleaned_and_named_when_missing() {
    let mut w = crate::plan::Workload {
        endpoints: vec![endpoint(Some("POST"), vec![], Some("{}"))],
        ..Default::default()
    };
    let from_env = |env: &str| Header {
        name: "Authorization".into(),
        value: None,
        value_from: Some(HeaderValueFrom {
            secret_key_ref: None,
            env: Some(env.into()),
        }),
    };
    w.endpoints[0].headers = vec![from_env("SET"), from_env("UNSET"), from_env("BROKEN")];
    let env = |name: &str| match name {
        "SET" => Some("Bearer abc\n".into()),
        "BROKEN" => Some("a\nb".into()),
        _ => None,
    };
    let errs = HeaderValues::read(&w, env).unwrap_err();
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "workload.endpoints[0].headers[1].valueFrom.env",
            "workload.endpoints[0].headers[2].valueFrom.env"
        ]
    );
    assert!(errs[0].message.contains("UNSET is not set"), "{errs:?}");
    assert!(errs[1].message.contains("line break"), "{errs:?}");
    // No error message repeats a value.
    assert!(errs.iter().all(|e| !e.message.contains("a\nb")));
    w.endpoints[0].headers.truncate(1);
    let values = HeaderValues::read(&w, env).unwrap();
    assert_eq!(
        values.get("SET"),
        Some("Bearer abc"),
        "the newline is dropped"
    );
    assert_eq!(format!("{values:?}"), "{\"SET\"}", "Debug shows names only");
}

#[test]
fn a_secret_ref_left_in_a_plan_is_refused_by_the_load_generator() {
    let mut w = crate::plan::Workload {
        endpoints: vec![endpoint(None, vec![], None)],
        ..Default::default()
    };
    w.endpoints[0].headers = vec![Header {
        name: "Authorization".into(),
        value: None,
        value_from: Some(HeaderValueFrom {
            secret_key_ref: Some(crate::plan::SecretKeyRef {
                name: "api".into(),
                key: "token".into(),
            }),
            env: None,
        }),
    }];
    let errs = HeaderValues::read(&w, |_| None).unwrap_err();
    assert_eq!(
        errs[0].path,
        "workload.endpoints[0].headers[0].valueFrom.secretKeyRef"
    );
}
