//! The load generator's JSON speaks the status schema's language (`requests`, `errors`, `rps`,
//! `latencyMs: {p50, p90, p99, p999, max, mean}`, absent without samples): each stream of a
//! `benchmatrix-loadgen --out FILE` document, taken by the field names the CRD gives
//! `status.cells[].results[]`, is a valid entry, and equals what the operator's own conversion
//! (`results::cell_results`) writes there. A required field renamed in the loadgen's JSON or in
//! the status types fails here.

use std::io::{Read, Write};
use std::net::TcpListener;

use benchmatrix_tests::schema_check::check;
use serde_json::Value;

/// A keep-alive HTTP/1.1 server answering every request with 200 "ok"; lives until the test
/// process ends.
fn ok_server() -> String {
    server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
}

/// A keep-alive HTTP/1.1 server answering every request with 500; no request ever succeeds.
fn failing_server() -> String {
    server(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nfail")
}

/// A keep-alive HTTP/1.1 server answering every request with `answer`.
fn server(answer: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if conn.write_all(answer).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}/hello")
}

/// Runs the load generator's command line in-process and returns the document it wrote.
fn loadgen(args: &[&str]) -> Value {
    loadgen_exiting(args, std::process::ExitCode::SUCCESS)
}

/// As [`loadgen`], expecting exit code `expected` (1 when no request succeeded).
fn loadgen_exiting(args: &[&str], expected: std::process::ExitCode) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result.json");
    let mut argv = vec!["benchmatrix-loadgen".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv.extend(["--out".into(), out.display().to_string()]);
    let code = benchmatrix_loadgen::cli::main(argv.into_iter().map(Into::into).collect());
    assert_eq!(code, expected, "{args:?}");
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// The CRD's schema of one `status.cells[].results[]` entry.
fn result_schema() -> Value {
    let crd: Value = serde_yaml::from_str(&benchmatrix::resource::crdgen::crd_yaml()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        ["cells"]["items"]["properties"]["results"]["items"]
        .clone()
}

/// The stream's fields that the status schema also names, plus its phase: what the operator
/// copies into the status. Fields only the result document has (histograms, timelines) are left
/// out; the schema's `required` list is what must be there.
fn as_status_entry(schema: &Value, phase: &Value, stream: &Value) -> Value {
    let mut entry = serde_json::Map::new();
    entry.insert("phase".into(), phase["name"].clone());
    for key in schema["properties"].as_object().unwrap().keys() {
        if let Some(v) = stream.get(key) {
            entry.insert(key.clone(), v.clone());
        }
    }
    Value::Object(entry)
}

fn assert_fits(schema: &Value, value: &Value, what: &str) {
    let mut errors = Vec::new();
    check(schema, value, what, &mut errors);
    assert!(errors.is_empty(), "{what}: {errors:?}\n{value:#}");
}

#[test]
fn closed_and_open_loop_results_fit_the_status_schema() {
    let url = ok_server();
    let schema = result_schema();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in ["requests", "errors", "rps", "samples", "endpoint", "phase"] {
        assert!(
            required.contains(&name),
            "status requires {name}: {required:?}"
        );
    }

    let closed = loadgen(&["-c", "2", "-d", "1s", &url]);
    let open = loadgen(&["-R", "200", "-d", "1s", &url]);
    for (doc, kind) in [(&closed, "closed"), (&open, "open")] {
        let phase = &doc["phases"][0];
        let stream = &phase["streams"][0];
        assert!(
            stream["requests"].as_u64().unwrap() > 0,
            "{kind}: {stream:#}"
        );
        let mut entry = as_status_entry(&schema, phase, stream);
        // The one field the status derives: the samples behind the percentiles, which are the
        // successful requests.
        let samples = stream["requests"].as_u64().unwrap() - stream["errors"].as_u64().unwrap();
        entry["samples"] = samples.into();
        assert_fits(&schema, &entry, &format!("{kind} loop result"));
        // The operator's conversion, from the same document, writes exactly that entry, plus
        // the percentiles the samples cannot support (a second of load: p99.9 at most).
        let typed: benchmatrix_loadgen::result::RunResult =
            serde_json::from_value(doc.clone()).unwrap();
        let mut converted =
            serde_json::to_value(&benchmatrix::engine::results::cell_results(&typed)[0]).unwrap();
        assert_fits(&schema, &converted, &format!("{kind} loop status entry"));
        if let Some(thin) = converted
            .as_object_mut()
            .unwrap()
            .remove("unsupportedPercentiles")
        {
            assert!(
                samples < 1000,
                "{kind}: {samples} samples, {thin} unsupported"
            );
        }
        assert_eq!(
            converted, entry,
            "{kind}: the status entry differs from the document"
        );
    }

    // Open loop carries the uncorrected figures beside the corrected ones, under a name that
    // says so, with the same percentile names.
    let stream = &open["phases"][0]["streams"][0];
    let names = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        names(&stream["uncorrectedLatencyMs"]),
        names(&stream["latencyMs"])
    );
    assert!(stream["offeredRps"].as_f64().unwrap() > 0.0, "{stream:#}");
    // Closed loop has no uncorrected figures to show: the names are absent, not zero.
    let closed_stream = &closed["phases"][0]["streams"][0];
    assert!(closed_stream.get("uncorrectedLatencyMs").is_none());
}

/// A stream whose every request failed has no latency at all: no `latencyMs` in the load
/// generator's document (not a block of zeros), and none in the status entry made from it.
#[test]
fn a_stream_without_a_successful_request_has_no_latency() {
    let url = failing_server();
    let doc = loadgen_exiting(
        &["-c", "2", "-d", "1s", &url],
        std::process::ExitCode::from(1),
    );
    let stream = &doc["phases"][0]["streams"][0];
    let requests = stream["requests"].as_u64().unwrap();
    assert!(requests > 0, "{stream:#}");
    assert_eq!(stream["errors"].as_u64(), Some(requests), "{stream:#}");
    assert!(
        stream.get("latencyMs").is_none(),
        "latency of no sample: {:#}",
        stream["latencyMs"]
    );
    let typed: benchmatrix_loadgen::result::RunResult =
        serde_json::from_value(doc.clone()).unwrap();
    let entry =
        serde_json::to_value(&benchmatrix::engine::results::cell_results(&typed)[0]).unwrap();
    assert!(entry.get("latencyMs").is_none(), "{entry:#}");
    assert_fits(&result_schema(), &entry, "status entry without samples");
}
