//! Starting the service: detect the CPU limit, size loops and pool from it, bind, run the
//! event loops, and stop them gracefully.
//!
//! Every event loop is a tokio *current-thread* runtime on its own OS thread. `single` and
//! `pool` run one (on the main thread); `threads` runs N, all accepting from one shared socket
//! (see [`crate::listener`] for why). Tokio's multi-thread runtime is deliberately not used for
//! `threads`: its work-stealing and per-worker LIFO slot can leave a freshly woken task queued
//! behind a worker that is stuck in inline CPU work, which blurs exactly the behaviour a
//! benchmark of "N loops with inline CPU work" must show (a blocked loop blocks its own
//! connections, and only those).
//!
//! A separate `stats` thread, with a current-thread runtime of its own, samples CPU and RSS and
//! (with `--stats-port`) serves `/stats`, `/healthz` and `/metrics` on a second port: no
//! workload runs there, so a busy event loop cannot delay those reads, and the reads do not
//! queue in front of the workload either. Event-loop lag is still measured on each loop.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::app::{app, stats_app};
use crate::config::{Args, Mode, StatsPort};
use crate::connection::{ConnectionCounters, Timeouts};
use crate::listener::{Balance, SharedListener, bind};
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::server::{self, Limits};
use crate::service::{Service, Settings};
use crate::shutdown::{self, Shutdown, Trigger};
use crate::stats::{Stats, sample_forever, watch_loop_lag};
use crate::work::calibrate_fib;

/// Stack of each event-loop thread. Only touched pages count towards RSS, and the futures live
/// on the heap, so this is headroom rather than memory use.
const LOOP_STACK: usize = 2 * 1024 * 1024;
/// Connections the statistics listener takes at once: its readers are a few load generators,
/// the operator and a metrics scraper, and a flood of it must not cost the workload many
/// descriptors.
const STATS_MAX_CONNECTIONS: usize = 64;

/// Why the service could not run, with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    /// 2 for a configuration the user must change (e.g. a port that cannot be bound), 1 for
    /// anything else.
    pub exit_code: u8,
    /// What went wrong.
    pub error: anyhow::Error,
}

impl Failure {
    fn runtime(error: anyhow::Error) -> Self {
        Failure {
            exit_code: 1,
            error,
        }
    }
}

/// Runs the service until SIGTERM/SIGINT and the grace period are over.
pub fn serve(args: Args) -> Result<(), Failure> {
    let sizing = Sizing::detect(&args);
    log_settings(&args, &sizing);
    let listeners = Listeners::bind(&args)?;
    let (loop_threads, pool_size) = (sizing.loop_threads, sizing.pool_size);
    let stats = new_stats(&args, sizing, listeners.stats_addr);
    let limits = Limits::new(
        server::fit_descriptor_limit(args.max_connections as usize),
        connection_timeouts(&args),
        Arc::clone(&stats.connections),
    );
    let service = build_service(&args, pool_size, stats)?;

    let rt = current_thread_runtime().map_err(Failure::runtime)?;
    let (trigger, shutdown) = shutdown::channel();
    start_stats_thread(
        listeners.stats,
        Arc::clone(&service),
        Limits::new(
            STATS_MAX_CONNECTIONS,
            connection_timeouts(&args),
            Arc::new(ConnectionCounters::default()),
        ),
        shutdown.clone(),
    )
    .map_err(Failure::runtime)?;
    let first = LoopContext {
        index: 0,
        listener: listeners.workload,
        balance: Balance::new(loop_threads),
        service: Arc::clone(&service),
        limits,
        shutdown,
        grace: args.grace_period,
    };
    let result = rt.block_on(run_loops(
        first,
        loop_threads,
        trigger,
        listeners.workload_addr,
        listeners.stats_addr,
    ));
    if let Some(pool) = &service.pool {
        pool.close();
    }
    result.map_err(Failure::runtime)?;
    tracing::info!("stopped");
    Ok(())
}

/// The CPU limit this process runs under, and the event loops and pool workers sized from it.
struct Sizing {
    limit: benchmatrix_quota::CpuLimit,
    loop_threads: usize,
    pool_size: usize,
}

impl Sizing {
    /// Detects the limit and logs it; `--threads` and `--pool-size` may follow it or override it.
    fn detect(args: &Args) -> Self {
        let limit = benchmatrix_quota::detect();
        let loop_threads = match args.mode {
            Mode::Threads => args.threads.resolve(limit.detected_cpus),
            Mode::Single | Mode::Pool => 1,
        };
        let pool_size = match args.mode {
            Mode::Pool => args.pool_size.resolve(limit.detected_cpus),
            Mode::Single | Mode::Threads => 0,
        };
        tracing::info!(
            detected_cpus = limit.detected_cpus,
            host_cpus = limit.host_cpus,
            cpu_quota = ?limit.quota_cores,
            source = %limit.source,
            "CPU limit detected: {} CPU(s) from {}",
            limit.detected_cpus,
            limit.source
        );
        Sizing {
            limit,
            loop_threads,
            pool_size,
        }
    }
}

/// One log line with every setting the service starts with.
fn log_settings(args: &Args, sizing: &Sizing) {
    tracing::info!(
        mode = args.mode.as_str(),
        loop_threads = sizing.loop_threads,
        pool_size = sizing.pool_size,
        queue_depth = args.queue_depth,
        fast_ms = args.fast_ms,
        slow_ms = args.slow_ms,
        offload = ?args.offload,
        offload_threshold_ms = args.offload_threshold_ms,
        header_timeout = ?args.header_timeout,
        idle_timeout = ?args.idle_timeout,
        max_connections = args.max_connections,
        "starting"
    );
}

/// The workload's socket and, with `--stats-port`, the statistics socket, with the addresses
/// they were bound to (port 0 asks the kernel for one).
struct Listeners {
    workload: TcpListener,
    workload_addr: SocketAddr,
    stats: Option<TcpListener>,
    stats_addr: Option<SocketAddr>,
}

impl Listeners {
    /// Binds both sockets; a port that cannot be bound is the user's to change (exit code 2).
    fn bind(args: &Args) -> Result<Self, Failure> {
        let workload = bind(args.host, args.port).map_err(|e| Failure {
            exit_code: 2,
            error: anyhow::anyhow!("cannot listen on {}:{}: {e}", args.host, args.port),
        })?;
        let workload_addr = workload
            .local_addr()
            .map_err(|e| Failure::runtime(e.into()))?;
        let stats = match args.stats_port {
            StatsPort::Off => None,
            StatsPort::Port(port) => Some(bind(args.host, port).map_err(|e| Failure {
                exit_code: 2,
                error: anyhow::anyhow!(
                    "cannot listen on {}:{port} for statistics (--stats-port): {e}",
                    args.host
                ),
            })?),
        };
        let stats_addr = match &stats {
            Some(l) => Some(l.local_addr().map_err(|e| Failure::runtime(e.into()))?),
            None => None,
        };
        Ok(Listeners {
            workload,
            workload_addr,
            stats,
            stats_addr,
        })
    }
}

/// The header and idle deadlines of every connection, on either port.
fn connection_timeouts(args: &Args) -> Timeouts {
    Timeouts {
        header: args.header_timeout,
        idle: args.idle_timeout,
    }
}

/// The statistics every loop and the stats thread share, sized as `sizing` says.
fn new_stats(args: &Args, sizing: Sizing, stats_addr: Option<SocketAddr>) -> Arc<Stats> {
    let mut stats = Stats::new(
        args.mode,
        sizing.limit,
        sizing.pool_size,
        sizing.loop_threads,
    );
    if let Some(addr) = stats_addr {
        stats = stats.with_stats_port(addr.port());
    }
    Arc::new(stats)
}

/// What every event loop serves from: its settings, the statistics and metrics, and (in pool
/// mode) the started CPU pool of `pool_size` workers.
fn build_service(
    args: &Args,
    pool_size: usize,
    stats: Arc<Stats>,
) -> Result<Arc<Service>, Failure> {
    let pool = match args.mode {
        Mode::Pool => Some(
            Pool::start(
                pool_size,
                args.queue_depth as usize,
                Duration::from_millis(args.task_deadline_ms),
                Arc::clone(&stats),
            )
            .context("starting the CPU pool")
            .map_err(Failure::runtime)?,
        ),
        _ => None,
    };
    Ok(Arc::new(Service {
        settings: Settings {
            mode: args.mode,
            fast_ms: args.fast_ms,
            slow_ms: args.slow_ms,
            offload: args.offload,
            offload_threshold_ms: args.offload_threshold_ms,
            task_deadline_ms: args.task_deadline_ms,
        },
        metrics: Metrics::new(Arc::clone(&stats)),
        stats,
        pool,
        fib_ns_per_call: calibrate_fib(),
    }))
}

/// Runs `count` event loops until shutdown: `first` on this thread, the others each on a
/// thread of their own; announces the addresses once they all accept.
async fn run_loops(
    first: LoopContext,
    count: usize,
    trigger: Trigger,
    workload_addr: SocketAddr,
    stats_addr: Option<SocketAddr>,
) -> anyhow::Result<()> {
    let signals = shutdown::on_signal(trigger).context("installing signal handlers")?;
    tokio::spawn(signals);

    let mut others = Vec::with_capacity(count.saturating_sub(1));
    for index in 1..count {
        let ctx = first.sibling(index)?;
        let handle = std::thread::Builder::new()
            .name(format!("loop-{index}"))
            .stack_size(LOOP_STACK)
            .spawn(move || {
                let rt = current_thread_runtime()?;
                rt.block_on(run_loop(ctx))
            })
            .context("starting an event-loop thread")?;
        others.push(handle);
    }
    announce(workload_addr, stats_addr);

    let first = run_loop(first).await;
    for handle in others {
        match handle.join() {
            Ok(r) => r?,
            Err(_) => anyhow::bail!("an event-loop thread panicked"),
        }
    }
    first
}

/// One line on stdout, once the socket accepts connections: the local runner and the tests wait
/// for it to learn the port. With a statistics port, a second line names it, written together
/// with the first so whoever sees one sees both.
fn announce(workload_addr: SocketAddr, stats_addr: Option<SocketAddr>) {
    let mut lines = format!("listening on http://{workload_addr}\n");
    if let Some(addr) = stats_addr {
        lines.push_str(&format!("statistics on http://{addr}\n"));
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(lines.as_bytes());
    let _ = out.flush();
    drop(out);
    tracing::info!(address = %workload_addr, "listening");
    if let Some(addr) = stats_addr {
        tracing::info!(address = %addr, "statistics listening (/stats, /healthz, /metrics)");
    }
}

fn current_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building an event-loop runtime")
}

/// Starts the `stats` thread: CPU/RSS sampling, and the statistics listener when there is one.
/// Its runtime is built here so that a failure stops the start instead of leaving an announced
/// port unserved.
fn start_stats_thread(
    listener: Option<TcpListener>,
    service: Arc<Service>,
    limits: Arc<Limits>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let rt = current_thread_runtime()?;
    std::thread::Builder::new()
        .name("stats".into())
        .stack_size(LOOP_STACK)
        .spawn(move || {
            rt.block_on(async move {
                tokio::spawn(sample_forever(Arc::clone(&service.stats)));
                let Some(listener) = listener else {
                    return shutdown.wait().await;
                };
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => {
                        server::serve(listener, stats_app(service), limits, shutdown).await
                    }
                    Err(e) => tracing::error!(error = %e, "cannot serve the statistics port"),
                }
            })
        })
        .context("starting the stats thread")?;
    Ok(())
}

struct LoopContext {
    index: usize,
    listener: TcpListener,
    balance: Arc<Balance>,
    service: Arc<Service>,
    limits: Arc<Limits>,
    shutdown: Shutdown,
    grace: Duration,
}

impl LoopContext {
    /// The context of loop `index`, accepting from a copy of this loop's socket.
    fn sibling(&self, index: usize) -> anyhow::Result<Self> {
        Ok(LoopContext {
            index,
            listener: self.listener.try_clone().context("sharing the listener")?,
            balance: Arc::clone(&self.balance),
            service: Arc::clone(&self.service),
            limits: Arc::clone(&self.limits),
            shutdown: self.shutdown.clone(),
            grace: self.grace,
        })
    }
}

/// One event loop: serves until shutdown, then drains for at most the grace period.
async fn run_loop(ctx: LoopContext) -> anyhow::Result<()> {
    tokio::spawn(watch_loop_lag(Arc::clone(&ctx.service.stats)));
    let listener = SharedListener::new(&ctx.listener, ctx.index, ctx.balance)
        .context("registering the listener")?;
    drop(ctx.listener);
    let serve = server::serve(listener, app(ctx.service), ctx.limits, ctx.shutdown.clone());
    let grace = ctx.grace;
    let deadline = async move {
        ctx.shutdown.wait().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        () = serve => {}
        _ = deadline => tracing::warn!(
            loop_index = ctx.index,
            grace_secs = grace.as_secs_f64(),
            "grace period over with requests still in flight; closing them"
        ),
    }
    Ok(())
}
