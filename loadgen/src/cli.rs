//! Command line: one-off use like wrk or oha, or `--plan FILE` for a phased workload.
//!
//! Exit codes: 0 when at least one request succeeded (or none did and the plan's
//! `noSuccessIsAResult` says that is a result), 1 when none did (or the run could not be
//! carried out), 2 for bad input (the message names the field or flag).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::limits::{MAX_CONNECTIONS_PER_STREAM, MAX_DURATION, MAX_RATE_PER_STREAM, MAX_THREADS};
use crate::load::{self, DEFAULT_OPEN_MAX_CONNECTIONS, GeneratorShare, RunConfig};
use crate::plan::{self, Duration, Endpoint, FieldError, Header, Phase, Spread, Stream, Workload};
use crate::request::HeaderValues;
use crate::result::RunResult;
use crate::summary;
use crate::target_url::TargetUrl;

/// Default closed-loop connections for one-off use (wrk's default).
const DEFAULT_CONNECTIONS: u32 = 10;

/// HTTP/1.1 load generator: closed loop (-c) or open loop (-R), HDR percentiles.
#[derive(Parser, Debug)]
#[command(name = "benchmatrix-loadgen", version, about, long_about = None)]
struct Args {
    /// Target URL for one-off use, e.g. http://127.0.0.1:8080/fast.
    url: Option<String>,

    /// Run a plan file (YAML or JSON: target, replicas, statsPath, threads, workload,
    /// preflight).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "connections", "duration", "rate", "timeout", "warmup"])]
    plan: Option<PathBuf>,

    /// Closed loop: keep-alive connections (default 10). With -R: the most connections the
    /// open loop may open (default 1000). At most 10000.
    #[arg(short = 'c', long = "connections", value_name = "N")]
    connections: Option<u32>,

    /// How long to run, e.g. 10s, 1m30s (a bare number means seconds); at most 24h.
    #[arg(
        short = 'd',
        long = "duration",
        value_name = "DURATION",
        default_value = "10s"
    )]
    duration: String,

    /// Open loop: requests per second on a fixed schedule (latency from the intended send
    /// time); at most 10000000.
    #[arg(short = 'R', long = "rate", value_name = "RATE")]
    rate: Option<f64>,

    /// Worker threads, at most 256 (default: what this process's CPU quota allows).
    #[arg(short = 't', long = "threads", value_name = "N")]
    threads: Option<u32>,

    /// Per-request timeout, e.g. 2s (default 10s); at most 24h.
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,

    /// Warm-up before measuring, not reported, e.g. 2s (default none); at most 24h.
    #[arg(long, value_name = "DURATION")]
    warmup: Option<String>,

    /// Print the result document as one line of JSON on stdout instead of the summary.
    #[arg(long)]
    json: bool,

    /// Also write the result document (JSON) to this file. It is opened before the run, so a
    /// path that cannot be written is refused before any load is sent.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,

    /// Write one JSON progress line per second to stderr.
    #[arg(long = "progress-json")]
    progress_json: bool,

    /// Read the target's statistics from this path at phase boundaries (one-off use; plans
    /// default to /stats).
    #[arg(long = "stats-path", value_name = "PATH")]
    stats_path: Option<String>,

    /// HTTP method for one-off use, e.g. POST (default GET).
    #[arg(
        short = 'm',
        long = "method",
        value_name = "METHOD",
        conflicts_with = "plan"
    )]
    method: Option<String>,

    /// A request header for one-off use, "Name: value"; repeat for more.
    #[arg(
        short = 'H',
        long = "header",
        value_name = "HEADER",
        conflicts_with = "plan"
    )]
    headers: Vec<String>,

    /// Request body for one-off use, sent with its Content-Length (not with GET or HEAD).
    #[arg(long = "body", value_name = "TEXT", conflicts_with = "plan")]
    body: Option<String>,
}

/// Parses `args` (program name first) and runs.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let (cfg, no_success_is_a_result) = match config(&args) {
        Ok(c) => c,
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let mut out_file = match args.out.as_deref().map(OutFile::open).transpose() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    raise_fd_limit();
    let progress_json = args.progress_json;
    let mut on_progress = |p: &crate::timeline::Progress| {
        if progress_json && let Ok(line) = serde_json::to_string(p) {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        }
    };
    let result = match load::run(&cfg, &mut on_progress) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(f) = out_file {
                f.discard();
            }
            return ExitCode::from(1);
        }
    };
    if let Err(code) = emit(&args, out_file.as_mut(), &result) {
        return code;
    }
    if result.successful_requests() > 0 || no_success_is_a_result {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: no request succeeded");
        ExitCode::from(1)
    }
}

/// The `--out` file, opened before the run so that a path that cannot be written (a missing
/// directory, a directory, no permission) is bad input, refused before any load is sent.
struct OutFile {
    path: PathBuf,
    /// Whether the file was created by this run (and so is removed if the run yields nothing).
    created: bool,
}

impl OutFile {
    /// Opens `path` for writing without truncating it yet: an earlier result stays until this
    /// run has one to replace it with.
    fn open(path: &std::path::Path) -> Result<Self, FieldError> {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| field("--out", format!("cannot write {}: {e}", path.display())))?;
        Ok(Self {
            path: path.to_owned(),
            created: !existed,
        })
    }

    /// Replaces the file's contents with `text`, all or nothing: written to a temporary file in
    /// the same folder, synced, then renamed over the file, so a full disk or a crash leaves the
    /// earlier contents (or the empty placeholder), never half a document.
    fn write(&mut self, text: &str) -> std::io::Result<()> {
        let mut tmp_name = self.path.file_name().unwrap_or_default().to_owned();
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = self.path.with_file_name(tmp_name);
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Removes the file if this run created it and has nothing to put in it.
    fn discard(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn emit(args: &Args, out_file: Option<&mut OutFile>, result: &RunResult) -> Result<(), ExitCode> {
    let json = serde_json::to_string(result).map_err(|e| {
        eprintln!("error: cannot encode the result: {e}");
        ExitCode::from(1)
    })?;
    if let Some(f) = out_file
        && let Err(e) = f.write(&format!("{json}\n"))
    {
        eprintln!("error: cannot write {}: {e}", f.path.display());
        return Err(ExitCode::from(1));
    }
    let mut out = std::io::stdout().lock();
    let text = if args.json {
        format!("{json}\n")
    } else {
        summary::render(result)
    };
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(())
}

/// A duration flag: the usual string forms, or a bare number of seconds as wrk accepts.
fn cli_duration(flag: &str, text: &str) -> Result<Duration, FieldError> {
    let parsed = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        format!("{text}s").parse::<Duration>()
    } else {
        text.parse::<Duration>()
    };
    parsed.map_err(|e| FieldError::new(flag, e.to_string()))
}

fn field(path: &str, message: impl Into<String>) -> FieldError {
    FieldError::new(path, message)
}

/// The `--threads` flag, when given, is 1 to [`MAX_THREADS`].
fn check_threads(threads: Option<u32>) -> Result<(), FieldError> {
    match threads {
        Some(0) => Err(field("--threads", "must be at least 1")),
        Some(t) if t > MAX_THREADS => Err(field(
            "--threads",
            format!("{t} is more than the {MAX_THREADS} threads allowed"),
        )),
        _ => Ok(()),
    }
}

fn default_threads() -> usize {
    benchmatrix_quota::detect().detected_cpus.max(1)
}

/// What to run: the plan file's workload with `--plan`, else the one-off run the flags
/// describe; and whether a run with no success is still a result (the plan's
/// `noSuccessIsAResult`; never for one-off use).
fn config(args: &Args) -> Result<(RunConfig, bool), Vec<FieldError>> {
    match &args.plan {
        Some(path) => plan_config(args, path),
        None => one_off_config(args).map(|c| (c, false)),
    }
}

/// `--plan FILE`: the plan as written, with `--threads` and `--stats-path` over its own.
fn plan_config(args: &Args, path: &std::path::Path) -> Result<(RunConfig, bool), Vec<FieldError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![field(
            "--plan",
            format!("cannot read {}: {e}", path.display()),
        )]
    })?;
    let plan = plan::parse_plan_file(&text)?;
    // Values named by environment variable are read now, so a missing one is bad input
    // (exit 2) before any load is sent.
    let header_values = HeaderValues::read(&plan.workload, |name| std::env::var_os(name))?;
    let target: TargetUrl = plan
        .target
        .parse()
        .map_err(|e: crate::target_url::ParseUrlError| vec![field("target", e.to_string())])?;
    check_threads(args.threads).map_err(|e| vec![e])?;
    let threads = match (args.threads, plan.threads) {
        (Some(t), _) | (None, Some(t)) => t as usize,
        (None, None) => default_threads(),
    };
    let no_success_is_a_result = plan.no_success_is_a_result;
    let cfg = RunConfig {
        target,
        workload: plan.workload,
        threads,
        replicas: plan.replicas,
        stats_addresses: plan.stats_addresses,
        stats_path: Some(
            args.stats_path
                .clone()
                .or(plan.stats_path)
                .unwrap_or_else(|| "/stats".into()),
        ),
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: GeneratorShare {
            index: plan.generator_index as usize,
            count: plan.generators as usize,
        },
        preflight: plan.preflight,
        header_values,
    };
    Ok((cfg, no_success_is_a_result))
}

/// The one-off flags that need parsing, parsed.
struct OneOffFlags {
    url: TargetUrl,
    duration: Duration,
    timeout: Option<Duration>,
    warmup: Option<Duration>,
}

/// Parses and checks every one-off flag, reporting all that are wrong at once; a missing URL is
/// reported on its own.
fn check_one_off_flags(args: &Args) -> Result<OneOffFlags, Vec<FieldError>> {
    let Some(url) = &args.url else {
        return Err(vec![field(
            "URL",
            "give a target URL (e.g. http://127.0.0.1:8080/) or --plan FILE",
        )]);
    };
    let mut errors = Vec::new();
    let url = url
        .parse::<TargetUrl>()
        .map_err(|e| errors.push(field("URL", e.to_string())))
        .ok();
    let duration = cli_duration("--duration", &args.duration)
        .map_err(|e| errors.push(e))
        .ok();
    let timeout = optional_duration("--timeout", args.timeout.as_deref(), &mut errors);
    let warmup = optional_duration("--warmup", args.warmup.as_deref(), &mut errors);
    check_load_flags(args, &mut errors);
    check_durations(duration, timeout, warmup, &mut errors);
    if let Some(p) = &args.stats_path
        && !p.starts_with('/')
    {
        errors.push(field("--stats-path", "must start with \"/\""));
    }
    match (url, duration, errors.is_empty()) {
        (Some(url), Some(duration), true) => Ok(OneOffFlags {
            url,
            duration,
            timeout,
            warmup,
        }),
        _ => Err(errors),
    }
}

/// An optional duration flag, parsed; a bad one goes to `errors`.
fn optional_duration(
    flag: &str,
    text: Option<&str>,
    errors: &mut Vec<FieldError>,
) -> Option<Duration> {
    text.map(|t| cli_duration(flag, t))
        .transpose()
        .map_err(|e| errors.push(e))
        .ok()
        .flatten()
}

/// `--connections`, `--rate` and `--threads`, when given, are within their bounds.
fn check_load_flags(args: &Args, errors: &mut Vec<FieldError>) {
    match args.connections {
        Some(0) => errors.push(field("--connections", "must be at least 1")),
        Some(c) if c > MAX_CONNECTIONS_PER_STREAM => errors.push(field(
            "--connections",
            format!("{c} is more than the {MAX_CONNECTIONS_PER_STREAM} connections allowed"),
        )),
        _ => {}
    }
    match args.rate {
        Some(r) if !(r.is_finite() && r > 0.0) => {
            errors.push(field("--rate", "must be a number greater than 0"))
        }
        Some(r) if r > MAX_RATE_PER_STREAM => errors.push(field(
            "--rate",
            format!("{r} is above the {MAX_RATE_PER_STREAM} requests per second allowed"),
        )),
        _ => {}
    }
    if let Err(e) = check_threads(args.threads) {
        errors.push(e);
    }
}

/// `--duration` and `--timeout` are greater than 0, and no duration flag is over
/// [`MAX_DURATION`].
fn check_durations(
    duration: Option<Duration>,
    timeout: Option<Duration>,
    warmup: Option<Duration>,
    errors: &mut Vec<FieldError>,
) {
    if matches!(duration, Some(d) if d.is_zero()) {
        errors.push(field("--duration", "must be greater than 0"));
    }
    if matches!(timeout, Some(d) if d.is_zero()) {
        errors.push(field("--timeout", "must be greater than 0"));
    }
    for (flag, d) in [
        ("--duration", duration),
        ("--timeout", timeout),
        ("--warmup", warmup),
    ] {
        if let Some(d) = d
            && d > MAX_DURATION
        {
            errors.push(field(
                flag,
                format!("{d} is longer than the {MAX_DURATION} allowed"),
            ));
        }
    }
}

/// A one-off run: one endpoint (the URL's path) in one phase named `run`, closed loop with `-c`
/// connections or open loop at `-R` requests per second.
fn one_off_config(args: &Args) -> Result<RunConfig, Vec<FieldError>> {
    let OneOffFlags {
        url,
        duration,
        timeout,
        warmup,
    } = check_one_off_flags(args)?;
    // The URL's path is the one endpoint; the base is the bare host.
    let path = if url.base_path.is_empty() {
        "/".to_owned()
    } else {
        url.base_path.clone()
    };
    let target = TargetUrl {
        base_path: String::new(),
        ..url
    };
    let (stream, open_max_connections) = one_off_stream(args, &path);
    let headers = args
        .headers
        .iter()
        .map(|h| one_off_header(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| vec![e])?;
    let workload = Workload {
        endpoints: vec![Endpoint {
            name: path.clone(),
            path,
            method: args.method.clone(),
            headers,
            body: args.body.clone(),
            success_codes: None,
        }],
        warmup: warmup.unwrap_or_default(),
        phases: vec![Phase {
            name: "run".into(),
            duration,
            load: vec![stream],
        }],
        timeout,
        spread: Spread::Service,
    };
    workload
        .validate()
        .map_err(|errs| errs.into_iter().map(as_flag_error).collect::<Vec<_>>())?;
    Ok(RunConfig {
        target,
        workload,
        threads: args
            .threads
            .map(|t| t as usize)
            .unwrap_or_else(default_threads),
        replicas: Vec::new(),
        stats_addresses: Vec::new(),
        stats_path: args.stats_path.clone(),
        open_max_connections,
        share: GeneratorShare::default(),
        preflight: None,
        header_values: HeaderValues::default(),
    })
}

/// The one-off stream to `endpoint`, and the most connections an open loop may open: `-c`
/// means connections in a closed loop and that bound in an open one.
fn one_off_stream(args: &Args, endpoint: &str) -> (Stream, usize) {
    match args.rate {
        Some(rate) => (
            Stream {
                endpoint: endpoint.to_owned(),
                connections: None,
                rate: Some(rate),
            },
            args.connections
                .map(|c| c as usize)
                .unwrap_or(DEFAULT_OPEN_MAX_CONNECTIONS),
        ),
        None => (
            Stream {
                endpoint: endpoint.to_owned(),
                connections: Some(args.connections.unwrap_or(DEFAULT_CONNECTIONS)),
                rate: None,
            },
            DEFAULT_OPEN_MAX_CONNECTIONS,
        ),
    }
}

/// A `--header "Name: value"` flag as a header (the space after the colon is optional, as in
/// curl and oha).
fn one_off_header(text: &str) -> Result<Header, FieldError> {
    let (name, value) = text.split_once(':').ok_or_else(|| {
        field(
            "--header",
            format!("{text:?} is not \"Name: value\" (no colon)"),
        )
    })?;
    Ok(Header {
        name: name.trim().to_owned(),
        value: Some(value.trim_start().to_owned()),
        value_from: None,
    })
}

/// A one-off run's workload error, named by the flag that set the field: the user wrote no
/// `workload.endpoints[0].method`, they wrote `--method`.
fn as_flag_error(e: FieldError) -> FieldError {
    const AT: &str = "workload.endpoints[0].";
    let Some(rest) = e.path.strip_prefix(AT) else {
        return e;
    };
    let flag = if rest.starts_with("method") {
        "--method"
    } else if rest.starts_with("headers") {
        "--header"
    } else if rest.starts_with("body") {
        "--body"
    } else {
        "URL"
    };
    // Which --header, when there are several.
    let message = match rest
        .strip_prefix("headers[")
        .and_then(|r| r.split_once(']'))
    {
        Some((i, _)) => format!(
            "#{}: {}",
            i.parse::<usize>().map_or(0, |i| i + 1),
            e.message
        ),
        None => e.message,
    };
    FieldError::new(flag, message)
}

/// Lifts the open-file limit to its hard maximum: an open loop against a stalled target may
/// need many sockets, and the soft default (often 1024) is an accident of history.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<RunConfig, Vec<FieldError>> {
        let mut v = vec!["benchmatrix-loadgen"];
        v.extend_from_slice(args);
        config(&Args::try_parse_from(v).unwrap()).map(|(c, _)| c)
    }

    #[test]
    fn a_result_write_that_fails_leaves_the_earlier_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        std::fs::write(&path, "{\"earlier\":true}\n").unwrap();
        let mut out = OutFile::open(&path).unwrap();
        // The temporary file cannot be made (a folder stands in its place): the write fails as
        // it would on a full disk, part-way, and the earlier result must still be there, whole.
        let tmp = dir
            .path()
            .join(format!("result.json.tmp-{}", std::process::id()));
        std::fs::create_dir(&tmp).unwrap();
        assert!(out.write("{\"new\":true}\n").is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"earlier\":true}\n"
        );
        std::fs::remove_dir(&tmp).unwrap();
        out.write("{\"new\":true}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"new\":true}\n");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn one_off_flags_build_a_single_phase() {
        let c = parse(&[
            "-c",
            "64",
            "-d",
            "3",
            "-t",
            "2",
            "http://127.0.0.1:9/healthz",
        ])
        .unwrap();
        assert_eq!(c.threads, 2);
        assert_eq!(c.workload.phases[0].duration, Duration::from_secs(3));
        assert_eq!(c.workload.phases[0].load[0].connections, Some(64));
        assert_eq!(c.workload.endpoints[0].path, "/healthz");
        let c = parse(&["-R", "50", "-c", "7", "http://127.0.0.1:9"]).unwrap();
        assert_eq!(c.workload.phases[0].load[0].rate, Some(50.0));
        assert_eq!(c.open_max_connections, 7);
        assert_eq!(c.workload.endpoints[0].path, "/");
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let paths = |args: &[&str]| -> Vec<String> {
            parse(args)
                .unwrap_err()
                .into_iter()
                .map(|e| e.path)
                .collect()
        };
        assert_eq!(paths(&["-c", "0", "http://h:1"]), ["--connections"]);
        assert_eq!(paths(&["-R", "0", "http://h:1"]), ["--rate"]);
        assert_eq!(paths(&["ftp://h"]), ["URL"]);
        assert_eq!(paths(&["-d", "ten", "http://h:1"]), ["--duration"]);
        assert_eq!(paths(&["--timeout", "0s", "http://h:1"]), ["--timeout"]);
        assert_eq!(paths(&[]), ["URL"]);
    }

    #[test]
    fn method_header_and_body_flags_make_the_endpoint_and_bad_ones_name_the_flag() {
        let c = parse(&[
            "-m",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-H",
            "X-Trace:abc",
            "--body",
            "{}",
            "http://127.0.0.1:9/orders",
        ])
        .unwrap();
        let e = &c.workload.endpoints[0];
        assert_eq!(e.method_or_default(), "POST");
        assert_eq!(e.body.as_deref(), Some("{}"));
        let headers: Vec<_> = e
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_deref().unwrap()))
            .collect();
        assert_eq!(
            headers,
            [("Content-Type", "application/json"), ("X-Trace", "abc")]
        );
        let refused = |args: &[&str], flag: &str, words: &str| {
            let errs = parse(args).unwrap_err();
            assert!(
                errs.iter()
                    .any(|e| e.path == flag && e.message.contains(words)),
                "{args:?}: expected {flag} saying {words:?}, got {errs:?}"
            );
        };
        refused(&["-H", "NoColon", "http://h:1"], "--header", "no colon");
        refused(
            &["-H", "A: b", "-H", "Host: x", "http://h:1"],
            "--header",
            "#2: Host",
        );
        refused(&["-H", "Bad Name: x", "http://h:1"], "--header", "spaces");
        refused(&["--body", "x", "http://h:1"], "--body", "GET request");
        refused(&["-m", "post", "http://h:1"], "--method", "\"POST\"");
    }

    #[test]
    fn flags_beyond_the_limits_name_the_flag_and_the_limit() {
        let refused = |args: &[&str], flag: &str, limit: &str| {
            let errs = parse(args).unwrap_err();
            assert!(
                errs.iter()
                    .any(|e| e.path == flag && e.message.contains(limit)),
                "{args:?}: expected {flag} naming {limit}, got {errs:?}"
            );
        };
        refused(
            &["-c", "1000000000", "http://h:1"],
            "--connections",
            "10000",
        );
        refused(
            &["-R", "10", "-c", "1000000000", "http://h:1"],
            "--connections",
            "10000",
        );
        refused(&["-R", "1e12", "http://h:1"], "--rate", "10000000");
        refused(&["-t", "100000", "http://h:1"], "--threads", "256");
        refused(&["-d", "99999999999h", "http://h:1"], "--duration", "8760h");
        refused(&["-d", "25h", "http://h:1"], "--duration", "24h");
        refused(&["--warmup", "25h", "http://h:1"], "--warmup", "24h");
        refused(&["--timeout", "25h", "http://h:1"], "--timeout", "24h");
        // At the limits, the run is accepted.
        parse(&["-c", "10000", "-d", "24h", "-t", "256", "http://h:1"]).unwrap();
        parse(&["-R", "1e7", "http://h:1"]).unwrap();
    }
}
