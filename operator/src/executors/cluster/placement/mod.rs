//! Where and when a run's cells run: the admission [`queue`] (which runs are active, and waking
//! the waiting ones), whether a cell can fit the nodes its placement allows ([`fit`]) with what
//! other pods already request there ([`requested`]), the node sets of a parallel run
//! ([`slots`]), the nodes kept by a watch for those checks ([`node_cache`]), and whether the
//! target pods a load runs against stay the same ones ([`target_pods`]).

pub mod fit;
pub mod node_cache;
pub mod queue;
pub mod requested;
pub mod slots;
pub mod target_pods;
