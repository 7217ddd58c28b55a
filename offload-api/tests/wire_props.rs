//! Property tests of the Homa, NDP and RoCEv2 layouts (`offload_api::wire::{homa, ndp,
//! roce}`): every header survives emit then parse unchanged, and parsing arbitrary or
//! truncated bytes returns an error instead of panicking.

use offload_api::wire::homa::{HomaAck, HomaBody, HomaData, HomaRepr, MAX_ACKS};
use offload_api::wire::ndp::{kind_of, NdpFlags, NdpRepr, HEADER_LEN};
use offload_api::wire::roce::{emit_ipv4, parse_ipv4, Aeth, Bth, RoceIpv4};
use proptest::prelude::*;

fn homa_ack() -> impl Strategy<Value = HomaAck> {
    (any::<u64>(), any::<u16>()).prop_map(|(client_id, server_port)| HomaAck {
        client_id,
        server_port,
    })
}

fn homa_body() -> impl Strategy<Value = HomaBody> {
    prop_oneof![
        (
            any::<u32>(),
            any::<u32>(),
            homa_ack(),
            any::<u16>(),
            any::<bool>(),
            any::<u32>()
        )
            .prop_map(
                |(message_length, incoming, ack, cutoff_version, retransmit, offset)| {
                    HomaBody::Data(HomaData {
                        message_length,
                        incoming,
                        ack,
                        cutoff_version,
                        retransmit,
                        offset,
                    })
                }
            ),
        (any::<u32>(), any::<u8>())
            .prop_map(|(offset, priority)| HomaBody::Grant { offset, priority }),
        (any::<u32>(), any::<u32>(), any::<u8>()).prop_map(|(offset, length, priority)| {
            HomaBody::Resend {
                offset,
                length,
                priority,
            }
        }),
        Just(HomaBody::RpcUnknown),
        Just(HomaBody::Busy),
        Just(HomaBody::NeedAck),
        (0..=MAX_ACKS, prop::array::uniform5(homa_ack())).prop_map(|(n, mut acks)| {
            for a in acks.iter_mut().skip(n) {
                *a = HomaAck::default();
            }
            HomaBody::Ack {
                count: n as u8,
                acks,
            }
        }),
    ]
}

fn ndp_flags() -> impl Strategy<Value = NdpFlags> {
    (0u8..=0x1f)
        .prop_map(NdpFlags)
        .prop_filter("valid", |f| kind_of(*f).is_ok())
}

proptest! {
    #[test]
    fn homa_round_trips(src in any::<u16>(), dst in any::<u16>(), id in any::<u64>(),
                        body in homa_body(), payload in prop::collection::vec(any::<u8>(), 0..64)) {
        let r = HomaRepr { src_port: src, dst_port: dst, sender_id: id, body };
        let mut b = vec![0u8; r.header_len() + payload.len()];
        let n = r.emit(&mut b).unwrap();
        b[n..].copy_from_slice(&payload);
        prop_assert_eq!(HomaRepr::parse(&b), Ok(r));
        for k in 0..n {
            prop_assert!(HomaRepr::parse(&b[..k]).is_err());
        }
        prop_assert!(r.emit(&mut vec![0; n - 1]).is_none());
    }

    #[test]
    fn homa_parse_never_panics(b in prop::collection::vec(any::<u8>(), 0..100)) {
        let _ = HomaRepr::parse(&b);
    }

    #[test]
    fn ndp_round_trips(flags in ndp_flags(), src in any::<u16>(), dst in any::<u16>(),
                       len in any::<u16>(), off in any::<u8>(), pull in any::<u16>(),
                       id in any::<u16>(), ptr in any::<u16>(), class in any::<u8>(),
                       payload in prop::collection::vec(any::<u8>(), 0..64)) {
        let r = NdpRepr { flags, src_context: src, dst_context: dst, msg_len: len,
            pkt_offset: off, pull_offset: pull, tx_msg_id: id, buf_ptr: ptr,
            buf_size_class: class };
        let mut b = vec![0u8; HEADER_LEN + payload.len()];
        r.emit(&mut b).unwrap();
        b[HEADER_LEN..].copy_from_slice(&payload);
        let (p, pl) = NdpRepr::parse(&b).unwrap();
        prop_assert_eq!(p, r);
        let data = flags == NdpFlags::DATA;
        prop_assert_eq!(pl.len(), if data { payload.len() } else { 0 });
        for k in 0..HEADER_LEN {
            prop_assert!(NdpRepr::parse(&b[..k]).is_err());
        }
    }

    #[test]
    fn ndp_parse_never_panics(b in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = NdpRepr::parse(&b);
    }

    #[test]
    fn roce_round_trips(op in any::<u8>(), se in any::<bool>(), m in any::<bool>(),
                        pad in 0u8..4, ver in 0u8..16, pkey in any::<u16>(), fecn in any::<bool>(),
                        becn in any::<bool>(), qp in 0u32..1 << 24, ar in any::<bool>(),
                        psn in 0u32..1 << 24, syn in any::<u8>(), msn in 0u32..1 << 24,
                        tos in any::<u8>(), ttl in any::<u8>(),
                        payload in prop::collection::vec(any::<u8>(), 0..64)) {
        let bth = Bth { opcode: op, solicited: se, mig_req: m, pad_count: pad, version: ver,
            pkey, fecn, becn, dest_qp: qp, ack_req: ar, psn };
        let aeth = Aeth { syndrome: syn, msn };
        let mut ab = [0u8; 4];
        aeth.emit(&mut ab).unwrap();
        let ext: &[u8] = if bth.has_aeth() { &ab } else { &[] };
        let ip = RoceIpv4 { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], tos, ident: 7,
            dont_frag: true, ttl, udp_src: 50000 };
        let mut b = vec![0u8; 200];
        let n = emit_ipv4(&ip, &bth, ext, &payload, &mut b).unwrap();
        let p = parse_ipv4(&b[..n]).unwrap();
        prop_assert_eq!(p.bth, bth);
        prop_assert_eq!(p.aeth, bth.has_aeth().then_some(aeth));
        prop_assert_eq!(p.payload, &payload[..]);
        prop_assert!(p.icrc_ok);
        for k in 0..n {
            prop_assert!(parse_ipv4(&b[..k]).is_err());
        }
    }

    #[test]
    fn roce_parse_never_panics(b in prop::collection::vec(any::<u8>(), 0..128)) {
        let _ = parse_ipv4(&b);
        let _ = Bth::parse(&b);
        let _ = Aeth::parse(&b);
    }

    /// Corrupting bytes of a valid packet (lengths, header length, opcode) never panics.
    #[test]
    fn roce_parse_of_corrupted_packets_never_panics(
        flips in prop::collection::vec((0usize..64, any::<u8>()), 1..6),
        cut in 0usize..64,
    ) {
        let ip = RoceIpv4 { src: [1, 2, 3, 4], dst: [5, 6, 7, 8], ttl: 64, ..Default::default() };
        let bth = Bth { opcode: 0x11, ..Bth::default() };
        let mut b = vec![0u8; 128];
        let n = emit_ipv4(&ip, &bth, &[0, 0, 0, 1], &[9; 8], &mut b).unwrap();
        b.truncate(n);
        for (i, v) in flips {
            if let Some(x) = b.get_mut(i) {
                *x = v;
            }
        }
        let _ = parse_ipv4(&b);
        let _ = parse_ipv4(&b[..cut.min(b.len())]);
    }
}
