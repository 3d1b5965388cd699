//! `benchmatrix run FILE --secrets DIR` with a POST endpoint whose bearer token is kept in a
//! Secret: the token reaches the target on every request, read from DIR/NAME/KEY, and is written
//! nowhere in the output folder; without the file the run is refused before anything starts.

mod local_common;

use std::path::Path;
use std::process::{Command, Output};

use benchmatrix::fixtures::{connections, header, phase, post, secret_header};
use benchmatrix::resource::{BenchmarkRun, Configuration};
use local_common::{exe, text};

/// A keep-alive HTTP/1.1 server (Python's standard library, as the other local tests use) that
/// appends every POST it reads to $RECORD as one JSON line and answers 201.
const RECORDER: &str = r#"
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

record = open(os.environ["RECORD"], "a")

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def do_GET(self):
        self.answer(200 if self.path == "/healthz" else 404)
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        record.write(json.dumps({"method": self.command, "path": self.path,
                                 "headers": self.headers.items(),
                                 "body": body.decode()}) + "\n")
        record.flush()
        self.answer(201)

ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
"#;

/// The spec: one cell running `script` (which records to `record`), a POST with a literal
/// header and one from Secret `api-token` key `token`.
fn spec(script: &Path, record: &Path) -> String {
    BenchmarkRun::sample()
        .named("post")
        .with_target_command(["python3", &script.display().to_string()])
        .with_cell(Configuration::named("x1").env("RECORD", &record.display().to_string()))
        .with_endpoints([post(
            "order",
            "/orders",
            [
                header("Content-Type", "application/json"),
                secret_header("Authorization", "api-token", "token"),
            ],
            r#"{"item": 7}"#,
        )])
        .with_phases([phase("p", "1s", [connections("order", 1)])])
        .to_yaml()
}

fn run(dir: &Path, yaml: &str, secrets: Option<&Path>) -> Output {
    let file = dir.join("run.yaml");
    std::fs::write(&file, yaml).unwrap();
    let mut cmd = Command::new(exe());
    cmd.arg("run").arg(&file).arg("--out").arg(dir.join("out"));
    if let Some(s) = secrets {
        cmd.arg("--secrets").arg(s);
    }
    cmd.output().expect("start benchmatrix run")
}

/// Every file under `dir`, with its contents.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

#[test]
fn a_secret_header_value_comes_from_the_secrets_folder_and_is_written_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("recorder.py");
    std::fs::write(&script, RECORDER).unwrap();
    let record = dir.path().join("requests.jsonl");
    // Laid out as a mounted Secret; the trailing newline (as `echo` writes) is not sent.
    let secrets = dir.path().join("secrets");
    std::fs::create_dir_all(secrets.join("api-token")).unwrap();
    std::fs::write(secrets.join("api-token/token"), "Bearer tok-9f8e7d\n").unwrap();

    let o = run(dir.path(), &spec(&script, &record), Some(&secrets));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let lines = std::fs::read_to_string(&record).expect("the target recorded requests");
    let requests: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(requests.len() > 5, "{} requests", requests.len());
    for r in &requests {
        assert_eq!(r["method"], "POST");
        assert_eq!(r["path"], "/orders");
        assert_eq!(r["body"], r#"{"item": 7}"#);
        let headers: Vec<(String, String)> = serde_json::from_value(r["headers"].clone()).unwrap();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            get("Authorization"),
            Some("Bearer tok-9f8e7d"),
            "{headers:?}"
        );
        assert_eq!(get("Content-Type"), Some("application/json"));
        assert_eq!(get("Content-Length"), Some("11"));
    }

    // The plan names an environment variable; no file of the run holds the value.
    let out = dir.path().join("out");
    let files = files_under(&out);
    assert!(files.iter().any(|(p, _)| p.contains("plans")), "{files:?}");
    for (path, bytes) in &files {
        let t = String::from_utf8_lossy(bytes);
        assert!(!t.contains("tok-9f8e7d"), "{path} holds the secret value");
        if path.contains("plans") {
            assert!(t.contains("BENCHMATRIX_HEADER_0_1"), "{path}: {t}");
        }
    }
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!said.contains("tok-9f8e7d"));
}

#[test]
fn a_secret_missing_from_the_folder_or_no_folder_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("recorder.py");
    let record = dir.path().join("requests.jsonl");
    let yaml = spec(&script, &record);
    let at = "spec.workload.endpoints[0].headers[1].valueFrom.secretKeyRef";

    let o = run(dir.path(), &yaml, None);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr.contains(at) && stderr.contains("--secrets DIR"),
        "{stderr}"
    );

    let empty = dir.path().join("secrets");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(dir.path(), &yaml, Some(&empty));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr.contains(at) && stderr.contains("api-token/token"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists(), "nothing may start");
    assert!(!record.exists(), "no target was started");
}
