//! The report as a person looks at it, for a saved status of every kind (fixed load, repeated,
//! variants, capacity with rounds, a capacity search the load generator stopped, sizing, a
//! failed cell and a too-short phase, hostile names, a run that measured nothing):
//!
//! - every SVG parses (xmllint) and renders (rsvg-convert) to a PNG of more than one colour;
//! - report.html opens in headless Chromium with no console error and no network request,
//!   every chart has a size, the verdict banner gives the exit code the verdict gives, and the
//!   hostile names show as written (escaped once); a failing page leaves its screenshot in
//!   `$BENCHMATRIX_ARTIFACTS` (default: the system's temp folder);
//! - the largest page renders in under a second.
//!
//! Chromium (Debian's `chromium`), xmllint and rsvg-convert are installed by
//! scripts/test-deps.sh; without them these tests fail and say so, never pass silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use benchmatrix::frontends::report::{headline, markdown, parse_status, write_report};

use benchmatrix_tests::repo_root;

/// (name, fixture, texts the page must show).
const FIXTURES: [(&str, &str, &[&str]); 9] = [
    (
        "fixed-failed-thin",
        "operator/tests/fixtures/finished/ci-gate.yaml",
        &["failed: NeverReady", "too few samples: 40 of 100"],
    ),
    ("repeated", "operator/tests/fixtures/compare/base.yaml", &[]),
    (
        "variants",
        "operator/tests/fixtures/finished/paired.yaml",
        &["Each candidate against its base"],
    ),
    (
        "capacity-rounds",
        "operator/tests/fixtures/report/capacity-rounds.yaml",
        &["round 2", "held (median) 95 rps"],
    ),
    (
        "capacity-loadgen",
        "operator/tests/fixtures/report/capacity-loadgen.yaml",
        &[
            "no answer",
            "fast & <wide>",
            "stopped by the load generator",
        ],
    ),
    (
        "sizing",
        "tests/e2e/sized-status.yaml",
        &["chosen", "42 / 24 rps"],
    ),
    (
        "names",
        "operator/tests/fixtures/report/names.yaml",
        &[
            "<b>bold</b> & \"quoted\"",
            "ünïcödé-x2",
            "é<&>'",
            "broken</svg><script>alert(1)</script>",
        ],
    ),
    (
        "empty",
        "operator/tests/fixtures/report/empty.yaml",
        &["No cells: the run measured nothing"],
    ),
    (
        "repeated-regression",
        "operator/tests/fixtures/compare/new-regression.yaml",
        &[],
    ),
];

/// Renders every fixture into `dir/<name>/`; returns (name, folder, exit code, texts, render
/// time, report.html's size).
fn render_all(dir: &Path) -> Vec<(String, PathBuf, u8, Vec<String>, Duration, u64)> {
    FIXTURES
        .iter()
        .map(|(name, file, texts)| {
            let text = std::fs::read_to_string(repo_root().join(file)).unwrap();
            let status = parse_status(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
            let out = dir.join(name);
            let started = Instant::now();
            write_report(&out, &status, &[], &markdown::Notes::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let took = started.elapsed();
            let size = std::fs::metadata(out.join("report.html")).unwrap().len();
            let code = headline::verdict(&status, None).code;
            let texts = texts.iter().map(|t| t.to_string()).collect();
            (name.to_string(), out, code, texts, took, size)
        })
        .collect()
}

fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{tool} is needed: install Debian's {package} (scripts/test-deps.sh does)"
    );
}

/// Distinct colours of a PNG (8-bit RGB or RGBA, as rsvg-convert writes), up to 2.
fn colours(png: &[u8]) -> usize {
    let mut at = 8;
    let (mut width, mut channels, mut idat) = (0usize, 4usize, Vec::new());
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let data = &png[at + 8..at + 8 + len];
        if kind == b"IHDR" {
            width = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
            assert_eq!(data[8], 8, "bit depth");
            channels = match data[9] {
                2 => 3,
                6 => 4,
                t => panic!("colour type {t}"),
            };
        } else if kind == b"IDAT" {
            idat.extend_from_slice(data);
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&idat[..]), &mut raw).unwrap();
    let stride = width * channels;
    let mut prev = vec![0u8; stride];
    let mut first: Option<Vec<u8>> = None;
    for row in raw.chunks(stride + 1) {
        let (filter, line) = (row[0], &row[1..]);
        let mut cur = line.to_vec();
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 } as i16;
            let (b, c) = (
                prev[i] as i16,
                if i >= channels { prev[i - channels] } else { 0 } as i16,
            );
            let add = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                _ => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
            };
            cur[i] = cur[i].wrapping_add(add as u8);
        }
        for px in cur.chunks(channels) {
            match &first {
                None => first = Some(px.to_vec()),
                Some(f) if f != px => return 2,
                _ => {}
            }
        }
        prev = cur;
    }
    1
}

#[test]
fn every_chart_parses_and_renders_to_a_picture_that_is_not_blank() {
    need("xmllint", "libxml2-utils");
    need("rsvg-convert", "librsvg2-bin");
    let dir = tempfile::tempdir().unwrap();
    let mut charts = 0;
    for (name, out, ..) in render_all(dir.path()) {
        for entry in std::fs::read_dir(&out).unwrap() {
            let svg = entry.unwrap().path();
            if svg.extension().is_none_or(|e| e != "svg") {
                continue;
            }
            charts += 1;
            let lint = Command::new("xmllint")
                .arg("--noout")
                .arg(&svg)
                .output()
                .unwrap();
            assert!(
                lint.status.success(),
                "{name}: {}: {}",
                svg.display(),
                String::from_utf8_lossy(&lint.stderr)
            );
            let png = svg.with_extension("png");
            let conv = Command::new("rsvg-convert")
                .arg(&svg)
                .arg("-o")
                .arg(&png)
                .output()
                .unwrap();
            assert!(
                conv.status.success(),
                "{name}: {}: {}",
                svg.display(),
                String::from_utf8_lossy(&conv.stderr)
            );
            let bytes = std::fs::read(&png).unwrap();
            assert_eq!(
                colours(&bytes),
                2,
                "{name}: {} renders blank",
                svg.display()
            );
        }
    }
    assert!(charts >= 15, "only {charts} charts written");
}

#[test]
fn the_largest_page_renders_in_under_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let pages = render_all(dir.path());
    let (name, _, _, _, took, size) = pages.iter().max_by_key(|p| p.5).unwrap();
    println!("largest report.html: {name}, {size} bytes, rendered in {took:?}");
    assert!(*took < Duration::from_secs(1), "{name} took {took:?}");
}

#[test]
fn report_html_opens_in_a_browser_with_no_error_no_request_and_the_exit_codes_verdict() {
    need("chromium", "chromium");
    need("python3", "python3");
    let dir = tempfile::tempdir().unwrap();
    let shots = std::env::var_os("BENCHMATRIX_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&shots).unwrap();
    let pages = render_all(dir.path());
    let args: Vec<String> = pages
        .iter()
        .map(|(name, out, code, texts, ..)| {
            let min_charts = usize::from(*name != "empty");
            format!(
                "{}:{code}:{min_charts}:{}",
                out.join("report.html").display(),
                texts.join("|")
            )
        })
        .collect();
    let started = Instant::now();
    let o = Command::new("python3")
        .arg(repo_root().join("tests/browser/check_report.py"))
        .arg("chromium")
        .arg(&shots)
        .args(&args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    println!(
        "{stdout}browser check of {} pages: {:?}",
        pages.len(),
        started.elapsed()
    );
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        pages.len(),
        "{stdout}"
    );
}

#[test]
fn report_exits_with_the_verdict_and_every_page_leads_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let code = benchmatrix::frontends::report::run(benchmatrix::frontends::report::ReportArgs {
        status: repo_root().join("operator/tests/fixtures/finished/ci-gate.yaml"),
        out: Some(dir.path().to_path_buf()),
        max_regression: None,
    });
    // A threshold failed: 3, as `benchmatrix run` exited, never 0 for a page that rendered.
    assert_eq!(code, std::process::ExitCode::from(3));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let first = md
        .lines()
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap();
    assert_eq!(
        first,
        "**verdict: failed** — 1 of 3 threshold verdicts failed (exit 3)"
    );
    assert!(!md.contains("- outcome: Succeeded"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let body = &html[html.find("<body>").unwrap()..];
    assert!(
        body.starts_with("<body>\n<p class=\"verdict fail\" id=\"verdict\" data-exit=\"3\"><strong>failed</strong>"),
        "{body}"
    );
}
