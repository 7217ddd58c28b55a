//! TCP sequence numbers (RFC 9293 §3.4): [`offload_api::wire::seq`].

pub use offload_api::wire::seq::Seq;
