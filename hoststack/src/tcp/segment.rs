//! TCP segments for the host stack: the one TCP wire module, [`offload_api::wire::tcp`]
//! (RFC 9293 §3.1, RFC 7323, RFC 2018), re-exported under its own names (`TcpRepr` for a
//! parsed segment, `TcpHeader` for one to emit).

pub use offload_api::wire::tcp::{
    emit, header_len, parse, parse_options, SackBlock, TcpError, TcpFlags, TcpHeader, TcpOptions,
    TcpRepr, FIXED_HEADER_LEN, MAX_HEADER_LEN, MAX_SACK_BLOCKS,
};
