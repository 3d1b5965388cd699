//! A benchmark cell's CPU, throttling and memory, from the kubelet's own metrics: pure
//! functions from scraped text to figures (the HTTP client and the sampler live elsewhere).
//!
//! Where each figure comes from, and why:
//!
//! - **CPU seconds** and **memory**: `/metrics/resource`, the kubelet's CRI stats. They are
//!   fresh on every request, each sample stamped with when the runtime took it, so polling every
//!   second or so brackets a window's ends closely. CPU is the usage counter *interpolated* at the
//!   window's start and end between the bracketing samples; a window reaching past the samples
//!   is refused rather than extrapolated, and a counter going down (the container restarted) is
//!   refused too.
//! - **Throttling** (CFS periods, throttled periods and seconds): only `/metrics/cadvisor` has
//!   them, and cadvisor refreshes its stats in housekeeping, every 10-20 s (10 s with jitter);
//!   scraping faster returns the same sample (deduplicated by its timestamp). A 25 s window often
//!   holds only one sample, so the counters' growth between the first and last samples held is
//!   weighed by the CPU seconds used over the same span (the CFS counters move only while the
//!   container runs) and carried over to the window's CPU seconds; `throttleCoveredSeconds` says
//!   how much of the window lay between those samples. Fewer than two samples while the load ran
//!   give no throttling figure, and say so.
//! - **Memory idle** is the working set just before the window (the target idles before the
//!   load), **memory peak** the highest working set sampled in it. cadvisor's
//!   `container_memory_max_usage_bytes` is not used: it counts page cache and is a high-water mark
//!   since the container started, not over the window.
//!
//! Matching series to containers: by the `container`/`pod`/`namespace` labels when a series has
//! a container name (the resource endpoint; cadvisor under the systemd cgroup driver), else by the
//! container id ending its `id` cgroup path (cadvisor under cgroupfs, which leaves the names
//! empty). A pod's own cgroup is never taken for one of its containers.

pub mod figures;
pub mod join;
pub mod neighbours;
pub mod parse;
pub mod reader;

pub use figures::{ContainerFigures, MAX_POINTS, Samples, Window, figures, sum_replicas};
pub use parse::{ContainerId, Reading, Source, cadvisor_readings, resource_readings};
