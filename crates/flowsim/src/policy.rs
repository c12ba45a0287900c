//! The bandwidth-allocation policies compared in §5.2.1: one of core's
//! vocabularies (`netsched_core::names::FlowPolicy`), named `Policy` here.

pub use netsched_core::names::FlowPolicy as Policy;
