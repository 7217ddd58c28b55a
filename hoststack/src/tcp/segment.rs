//! TCP segments as the host stack names them: the one TCP wire module,
//! [`offload_api::wire::tcp`] (RFC 9293 §3.1, RFC 7323, RFC 2018), under the host's names
//! (`Segment` for a parsed segment, `Header` for one to emit).

pub use offload_api::wire::tcp::{
    emit, header_len, parse, parse_options, SackBlock, TcpError as SegmentError, TcpFlags as Flags,
    TcpHeader as Header, TcpOptions as Options, TcpRepr as Segment, FIXED_HEADER_LEN,
    MAX_HEADER_LEN, MAX_SACK_BLOCKS,
};
