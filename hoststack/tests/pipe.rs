//! `Context::pipe` (mTCP's `mtcp_pipe`): bytes, end of stream, EPIPE, a bounded buffer,
//! epoll readiness of both ends, and the errors of calls that do not apply to a pipe.

mod common;

use std::io::{IoSlice, IoSliceMut};

use common::*;
use hoststack::stack::{
    EpollEvent, EpollOp, Shutdown, SockOpt, SockOptName, EPOLLERR, EPOLLET, EPOLLHUP, EPOLLIN,
    EPOLLOUT,
};
use hoststack::Errno;

fn nonblocking_pipe(net: &mut Net) -> (i32, i32) {
    let (r, w) = net.a.pipe().unwrap();
    net.a.set_nonblocking(r, true).unwrap();
    net.a.set_nonblocking(w, true).unwrap();
    (r, w)
}

fn wait(net: &mut Net, ep: i32) -> Vec<EpollEvent> {
    let mut evs = [EpollEvent::default(); 8];
    let n = net.a.epoll_wait(ep, &mut evs, 0).unwrap();
    evs[..n].to_vec()
}

#[test]
fn bytes_written_to_the_write_end_are_read_from_the_read_end_in_order() {
    let mut net = Net::new();
    let (r, w) = nonblocking_pipe(&mut net);
    assert_ne!(r, w);
    assert!(net.a.is_pipe(r) && net.a.is_pipe(w));
    assert_eq!(net.a.write(w, b"hello, "), Ok(7));
    assert_eq!(
        net.a.writev(
            w,
            &[IoSlice::new(b"pi"), IoSlice::new(b""), IoSlice::new(b"pe")]
        ),
        Ok(4)
    );
    assert_eq!(net.a.pipe_buffered(r), Some(11));
    assert_eq!(net.a.pipe_buffered(w), Some(11));
    let mut a = [0u8; 3];
    let mut b = [0u8; 20];
    let n = net
        .a
        .readv(r, &mut [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)])
        .unwrap();
    assert_eq!(n, 11);
    assert_eq!(&a, b"hel");
    assert_eq!(&b[..8], b"lo, pipe");
    assert_eq!(net.a.read(r, &mut b), Err(Errno::Again));
    // Peek-style reads consume only what the callback takes.
    net.a.write(w, b"abc").unwrap();
    assert_eq!(
        net.a.read_with(r, |x, y| {
            assert_eq!([x, y].concat(), b"abc");
            1
        }),
        Ok(1)
    );
    assert_eq!(net.a.read(r, &mut b), Ok(2));
    assert_eq!(&b[..2], b"bc");
    assert_eq!(net.a.pipe_buffered(r), Some(0));
    assert_eq!(net.a.pipe_buffered(12345), None);
}

#[test]
fn the_buffer_is_bounded_by_the_send_buffer_size() {
    let mut c = cfg(A);
    c.tcp.send_buffer = 4096;
    let mut net = Net::with(c, cfg(B));
    let (r, w) = nonblocking_pipe(&mut net);
    let ep = net.a.epoll_create().unwrap();
    let out = EpollEvent {
        events: EPOLLOUT,
        data: 2,
    };
    net.a.epoll_ctl(ep, EpollOp::Add, w, out).unwrap();
    assert_eq!(
        wait(&mut net, ep),
        [EpollEvent {
            events: EPOLLOUT,
            data: 2
        }]
    );
    let big = vec![7u8; 10_000];
    assert_eq!(net.a.write(w, &big), Ok(4096));
    assert_eq!(net.a.write(w, b"x"), Err(Errno::Again));
    assert_eq!(net.a.readiness(w), 0);
    assert!(wait(&mut net, ep).is_empty(), "no room: no EPOLLOUT");
    let mut buf = [0u8; 1000];
    assert_eq!(net.a.read(r, &mut buf), Ok(1000));
    assert_eq!(net.a.readiness(w), EPOLLOUT);
    assert_eq!(wait(&mut net, ep).len(), 1, "room again: EPOLLOUT");
    assert_eq!(net.a.write(w, &big), Ok(1000));
}

#[test]
fn closing_the_write_end_is_end_of_stream_and_epollin_on_the_read_end() {
    let mut net = Net::new();
    let (r, w) = nonblocking_pipe(&mut net);
    let ep = net.a.epoll_create().unwrap();
    let ev = EpollEvent {
        events: EPOLLIN,
        data: 9,
    };
    net.a.epoll_ctl(ep, EpollOp::Add, r, ev).unwrap();
    assert!(wait(&mut net, ep).is_empty());
    net.a.write(w, b"last").unwrap();
    assert_eq!(
        wait(&mut net, ep),
        [EpollEvent {
            events: EPOLLIN,
            data: 9
        }]
    );
    net.a.close(w).unwrap();
    // The bytes still in the pipe come first, then end of stream.
    let mut buf = [0u8; 16];
    assert_eq!(net.a.read(r, &mut buf), Ok(4));
    assert_eq!(net.a.read(r, &mut buf), Ok(0));
    assert_eq!(net.a.read(r, &mut buf), Ok(0));
    assert_eq!(net.a.readiness(r), EPOLLIN | EPOLLHUP);
    assert_eq!(wait(&mut net, ep)[0].events, EPOLLIN | EPOLLHUP);
    assert_eq!(net.a.write(w, b"x"), Err(Errno::BadF), "closed");
    net.a.close(r).unwrap();
    assert_eq!(net.a.close(r), Err(Errno::BadF));
}

#[test]
fn writing_after_the_read_end_closed_is_epipe_and_epollerr() {
    let mut net = Net::new();
    let (r, w) = nonblocking_pipe(&mut net);
    let ep = net.a.epoll_create().unwrap();
    let ev = EpollEvent {
        events: EPOLLOUT | EPOLLET,
        data: 5,
    };
    net.a.epoll_ctl(ep, EpollOp::Add, w, ev).unwrap();
    assert_eq!(wait(&mut net, ep)[0].events, EPOLLOUT);
    assert!(wait(&mut net, ep).is_empty(), "edge-triggered: once");
    net.a.write(w, b"unread").unwrap();
    net.a.close(r).unwrap();
    assert_eq!(net.a.write(w, b"x"), Err(Errno::Pipe));
    assert_eq!(net.a.readiness(w), EPOLLOUT | EPOLLERR);
    assert_eq!(wait(&mut net, ep)[0].events, EPOLLOUT | EPOLLERR);
    net.a.close(w).unwrap();
}

#[test]
fn each_end_does_one_direction_and_no_socket_call() {
    let mut net = Net::new();
    let (r, w) = nonblocking_pipe(&mut net);
    let sock = net.a.socket().unwrap();
    let mut buf = [0u8; 4];
    assert_eq!(net.a.read(w, &mut buf), Err(Errno::BadF));
    assert_eq!(net.a.read_with(w, |_, _| 0), Err(Errno::BadF));
    assert_eq!(net.a.write(r, b"x"), Err(Errno::BadF));
    for fd in [r, w] {
        assert_eq!(net.a.connect(fd, addr(B, 80)), Err(Errno::NotSock));
        assert_eq!(net.a.bind(fd, addr(A, 80)), Err(Errno::NotSock));
        assert_eq!(net.a.bind(fd, addr(B, 80)), Err(Errno::NotSock));
        assert_eq!(net.a.listen(fd, 4), Err(Errno::NotSock));
        assert_eq!(net.a.accept(fd).map(|_| ()), Err(Errno::NotSock));
        assert_eq!(net.a.getsockname(fd).map(|_| ()), Err(Errno::NotSock));
        assert_eq!(net.a.getpeername(fd).map(|_| ()), Err(Errno::NotSock));
        assert_eq!(net.a.shutdown(fd, Shutdown::Both), Err(Errno::NotSock));
        assert_eq!(
            net.a.setsockopt(fd, SockOpt::NoDelay(true)),
            Err(Errno::NotSock)
        );
        assert_eq!(
            net.a.getsockopt(fd, SockOptName::Error),
            Err(Errno::NotSock)
        );
        assert_eq!(
            net.a.nsplice(fd, sock, Box::new(|_| {})),
            Err(Errno::NotSock)
        );
        // An end is no epoll instance either.
        let mut evs = [EpollEvent::default(); 1];
        assert_eq!(net.a.epoll_wait(fd, &mut evs, 0), Err(Errno::Inval));
    }
}

#[test]
fn ends_close_independently_and_descriptors_are_reused() {
    let mut c = cfg(A);
    c.max_fds = 3;
    let mut net = Net::with(c, cfg(B));
    let (r, w) = net.a.pipe().unwrap();
    let s = net.a.socket().unwrap();
    assert_eq!(net.a.pipe(), Err(Errno::MFile));
    net.a.close(s).unwrap();
    assert_eq!(net.a.pipe(), Err(Errno::MFile), "one descriptor free");
    net.a.close(w).unwrap();
    let (r2, w2) = net.a.pipe().unwrap();
    assert_ne!(r2, r);
    net.a.set_nonblocking(r, true).unwrap();
    net.a.set_nonblocking(r2, true).unwrap();
    net.a.set_nonblocking(w2, true).unwrap();
    // The old read end sees its own pipe's end, the new pipe carries its own bytes.
    let mut buf = [0u8; 4];
    assert_eq!(net.a.read(r, &mut buf), Ok(0));
    net.a.write(w2, b"new").unwrap();
    assert_eq!(net.a.read(r2, &mut buf), Ok(3));
    net.a.close(r).unwrap();
    net.a.close(r2).unwrap();
    net.a.close(w2).unwrap();
    // Closing an epoll instance drops a pipe end's registration.
    let (r, _w) = nonblocking_pipe(&mut net);
    let ep = net.a.epoll_create().unwrap();
    assert_eq!(net.a.epoll_create(), Err(Errno::MFile));
    let ev = EpollEvent {
        events: EPOLLIN,
        data: 1,
    };
    net.a.epoll_ctl(ep, EpollOp::Add, r, ev).unwrap();
    assert_eq!(net.a.epoll_ctl(ep, EpollOp::Add, r, ev), Err(Errno::Exist));
    net.a.close(ep).unwrap();
    assert_eq!(net.a.epoll_create(), Ok(ep), "its descriptor is free again");
    assert_eq!(
        net.a.epoll_ctl(ep, EpollOp::Mod, r, ev),
        Err(Errno::NoEnt),
        "the registration went with the old instance"
    );
}
