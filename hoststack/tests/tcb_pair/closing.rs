//! Closing.

use super::*;

pub(super) fn close_run(order: &str) -> Net {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 60);
    net.handshake();
    net.tcb(A).send(b"hello").unwrap();
    net.tcb(B).send(b"world").unwrap();
    net.run_for(100 * MS);
    let mut buf = [0u8; 16];
    assert_eq!(net.tcb(A).recv(&mut buf).unwrap(), 5);
    assert_eq!(net.tcb(B).recv(&mut buf).unwrap(), 5);
    match order {
        "active" => {
            net.tcb(A).close();
            net.run_for(100 * MS);
            assert_eq!(net.state(A), Some(State::FinWait2));
            assert_eq!(net.state(B), Some(State::CloseWait));
            assert!(net.tcb(B).fin_received());
            assert_eq!(net.tcb(B).recv(&mut buf), Ok(0));
            net.tcb(B).close();
        }
        "passive" => {
            net.tcb(B).close();
            net.run_for(100 * MS);
            assert_eq!(net.state(A), Some(State::CloseWait));
            net.tcb(A).close();
        }
        _ => {
            net.tcb(A).close();
            net.tcb(B).close();
        }
    }
    net.run_for(100 * MS);
    net
}

#[test]
fn active_close_goes_through_time_wait() {
    let mut net = close_run("active");
    assert_eq!(net.state(A), Some(State::TimeWait));
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(
        net.states[A],
        [
            State::SynSent,
            State::Established,
            State::FinWait1,
            State::FinWait2,
            State::TimeWait
        ]
    );
    assert_eq!(
        net.states[B],
        [
            State::SynReceived,
            State::Established,
            State::CloseWait,
            State::LastAck,
            State::Closed
        ]
    );
    let t = net.now;
    net.run_for(3 * SEC);
    assert_eq!(net.state(A), Some(State::Closed));
    assert!(net.tcb(A).is_finished() && net.tcb(A).error().is_none());
    // TIME_WAIT lasted 2 s (from the peer's FIN).
    assert!(net.now >= t + 2 * SEC);
}

#[test]
fn passive_close() {
    let mut net = close_run("passive");
    assert_eq!(net.state(B), Some(State::TimeWait));
    assert_eq!(net.state(A), Some(State::Closed));
    assert!(net.states[A].contains(&State::LastAck));
    net.run_for(3 * SEC);
    assert_eq!(net.state(B), Some(State::Closed));
    assert!(net.tcb(B).error().is_none());
}

#[test]
fn simultaneous_close() {
    let mut net = close_run("simultaneous");
    for i in 0..2 {
        assert_eq!(net.state(i), Some(State::TimeWait));
        assert!(
            net.states[i].contains(&State::Closing),
            "{:?}",
            net.states[i]
        );
    }
    net.run_for(3 * SEC);
    for i in 0..2 {
        assert_eq!(net.state(i), Some(State::Closed));
        assert!(net.tcb(i).error().is_none());
    }
}

#[test]
fn time_wait_reacks_retransmitted_fin() {
    let mut net = close_run("active");
    assert_eq!(net.state(A), Some(State::TimeWait));
    // B's FIN again (its ACK got lost, say).
    let fin = net
        .recs
        .iter()
        .rev()
        .find(|r| r.from == B && r.flags.has(TcpFlags::FIN))
        .unwrap()
        .clone();
    let h = TcpHeader {
        src_port: 80,
        dst_port: 40_000,
        seq: fin.seq,
        ack: fin.ack,
        flags: fin.flags,
        window: fin.win,
        options: fin.opts,
    };
    net.now += SEC;
    let n = net.recs.len();
    net.inject(A, &h, &[]);
    let re = &net.recs[n..];
    assert_eq!(re.len(), 1);
    assert_eq!(re[0].ack, fin.seq + 1);
    // The 2·MSL timer restarted.
    net.run_for(1_500 * MS);
    assert_eq!(net.state(A), Some(State::TimeWait));
    net.run_for(SEC);
    assert_eq!(net.state(A), Some(State::Closed));
}

#[test]
fn close_with_unread_data_sends_rst() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 61);
    net.handshake();
    net.tcb(A).send(b"unread").unwrap();
    net.run_for(100 * MS);
    assert_eq!(net.tcb(B).recv_available(), 6);
    net.tcb(B).close();
    net.run_for(100 * MS);
    assert!(net
        .recs
        .iter()
        .any(|r| r.from == B && r.flags.has(TcpFlags::RST)));
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), Some(TcpError::Reset));
    assert!(net.ev[A].error);
    assert_eq!(net.tcb(A).send(b"x"), Err(TcpError::Reset));
}

#[test]
fn data_after_close_gets_rst() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 62);
    net.handshake();
    net.tcb(B).close();
    net.run_for(100 * MS);
    assert_eq!(net.state(B), Some(State::FinWait2));
    net.tcb(A).send(b"late").unwrap();
    net.run_for(100 * MS);
    assert_eq!(net.state(B), Some(State::Closed));
    assert_eq!(net.tcb(A).error(), Some(TcpError::Reset));
}

#[test]
fn orphaned_fin_wait_2_times_out() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 63);
    net.handshake();
    net.tcb(A).close();
    net.run_for(100 * MS);
    assert_eq!(net.state(A), Some(State::FinWait2));
    net.run_for(3 * SEC);
    assert_eq!(net.state(A), Some(State::Closed));
    assert_eq!(net.state(B), Some(State::CloseWait));
}

#[test]
fn abort_sends_rst() {
    let mut net = Net::new(cfg(), cfg(), [Impair::delay(MS); 2], 64);
    net.handshake();
    net.tcb(A).abort();
    assert_eq!(net.state(A), Some(State::Closed));
    assert!(!net.tcb(A).is_finished(), "the RST is still to be sent");
    net.run_for(100 * MS);
    assert!(net.tcb(A).is_finished());
    assert_eq!(net.tcb(B).error(), Some(TcpError::Reset));
}
