//! RoCEv2 byte for byte against scapy's RoCE layer (`scapy.contrib.roce`, an independent
//! implementation of IBA Annex A17): the same packets built by both, compared whole,
//! including the ICRC scapy computes (`BTH.compute_icrc`). Data (RC RDMA WRITE Only), an
//! ACK/NAK with an AETH, and a DCQCN CNP.
//!
//! Needs python3 with scapy (Debian: `apt-get install python3-scapy`); the test fails with
//! that advice when neither `python3` on PATH nor `/usr/bin/python3` imports it.

use std::process::Command;

use offload_api::wire::roce::{
    emit_ipv4, opcode, parse_ipv4, Aeth, Bth, RoceIpv4, Syndrome, CNP_PAD_LEN,
};

const SCRIPT: &str = r#"
from scapy.all import IP, UDP, Raw, raw
from scapy.contrib.roce import BTH, AETH, CNPPadding, cnp
def ip():
    return IP(src="10.0.0.1", dst="10.0.0.2", tos=2, id=1, flags="DF", ttl=64) / \
        UDP(sport=49152, dport=4791, chksum=0)
pkts = [
    ip() / BTH(opcode=0x0a, solicited=1, pkey=0xffff, dqpn=0x123456, ackreq=1,
               psn=0xabcdef) / Raw(bytes(range(32))),
    ip() / BTH(opcode=0x11, pkey=0xffff, dqpn=0x10, psn=5) / AETH(syndrome=0x60, msn=7),
    ip() / BTH(opcode=0x81, becn=1, dqpn=0x42) / CNPPadding(),
    ip() / cnp(0x42),
]
for p in pkts:
    print(raw(p).hex())
"#;

/// Runs SCRIPT with the first python3 that has scapy's RoCE layer.
fn scapy_packets() -> Vec<Vec<u8>> {
    let mut tried = Vec::new();
    for py in ["python3", "/usr/bin/python3"] {
        match Command::new(py).arg("-c").arg(SCRIPT).output() {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8(o.stdout).expect("hex output");
                return text
                    .lines()
                    .map(|l| {
                        (0..l.len())
                            .step_by(2)
                            .map(|i| u8::from_str_radix(&l[i..i + 2], 16).expect("hex"))
                            .collect()
                    })
                    .collect();
            }
            Ok(o) => tried.push(format!(
                "{py}: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("failed")
            )),
            Err(e) => tried.push(format!("{py}: {e}")),
        }
    }
    panic!(
        "scapy's RoCE layer is missing: no python3 could `from scapy.contrib.roce import BTH, \
         AETH, CNPPadding` ({}). Install it: apt-get install python3-scapy",
        tried.join("; ")
    );
}

fn ip() -> RoceIpv4 {
    RoceIpv4 {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        tos: 2,
        ident: 1,
        dont_frag: true,
        ttl: 64,
        udp_src: 49152,
    }
}

fn ours() -> Vec<Vec<u8>> {
    let build = |bth: Bth, ext: &[u8], payload: &[u8]| {
        let mut b = vec![0u8; 256];
        let n = emit_ipv4(&ip(), &bth, ext, payload, &mut b).unwrap();
        b.truncate(n);
        b
    };
    let data = Bth {
        opcode: opcode::RC_RDMA_WRITE_ONLY,
        solicited: true,
        pkey: 0xffff,
        dest_qp: 0x12_3456,
        ack_req: true,
        psn: 0xab_cdef,
        ..Bth::default()
    };
    let payload: Vec<u8> = (0..32).collect();
    let ack = Bth {
        opcode: opcode::RC_ACKNOWLEDGE,
        pkey: 0xffff,
        dest_qp: 0x10,
        psn: 5,
        ..Bth::default()
    };
    let mut aeth = [0u8; 4];
    Aeth {
        syndrome: Syndrome::Nak { code: 0 }.to_u8(),
        msn: 7,
    }
    .emit(&mut aeth)
    .unwrap();
    let cnp = build(Bth::cnp(0x42), &[0; CNP_PAD_LEN], &[]);
    vec![
        build(data, &[], &payload),
        build(ack, &aeth, &[]),
        cnp.clone(),
        cnp,
    ]
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn roce_packets_match_scapy_byte_for_byte() {
    let theirs = scapy_packets();
    let ours = ours();
    assert_eq!(theirs.len(), ours.len());
    let names = [
        "RC RDMA WRITE Only",
        "RC ACK (NAK) + AETH",
        "CNP",
        "scapy cnp()",
    ];
    for ((t, o), name) in theirs.iter().zip(&ours).zip(names) {
        assert_eq!(hex(o), hex(t), "{name}: ours (left) vs scapy (right)");
        // And we parse scapy's bytes, ICRC included.
        let p = parse_ipv4(t).unwrap();
        assert!(
            p.icrc_ok,
            "{name}: scapy's ICRC {:#010x} not accepted",
            p.icrc
        );
    }
    let ack = parse_ipv4(&theirs[1]).unwrap();
    assert_eq!(
        ack.aeth.map(|a| Syndrome::from_u8(a.syndrome)),
        Some(Syndrome::Nak { code: 0 })
    );
    assert_eq!(ack.aeth.unwrap().msn, 7);
    let cnp = parse_ipv4(&theirs[2]).unwrap();
    assert_eq!(cnp.bth, Bth::cnp(0x42));
}
