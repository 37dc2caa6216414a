//! The simulated transport must catch what a real MPI would punish: a program that deadlocks
//! under rendezvous sends, a message of the wrong length, a send buffer changed early.

use pcoll::plan::{Buf, Piece, Program};
use pcoll::transport::sim::{run_programs, RankIo, SumU64};
use std::sync::Arc;

fn io(p: usize, n: usize) -> Vec<RankIo> {
    (0..p)
        .map(|_| RankIo {
            input: vec![1; 8 * n],
            out: Some(vec![0; 8 * n]),
            in_alias: None,
        })
        .collect()
}

#[test]
fn send_ring_deadlocks_and_is_reported() {
    // Everybody sends to the right before receiving from the left: fine with eager buffering,
    // a deadlock under rendezvous (ALGORITHMS.md pitfall 10).
    let p = 5;
    let make = Arc::new(move |r: usize| {
        let mut prog = Program::new();
        prog.send((r + 1) % p, vec![Piece::new(Buf::In, 0, 4)]);
        prog.recv((r + p - 1) % p, vec![Piece::new(Buf::Out, 0, 4)]);
        Ok(prog)
    });
    let err = run_programs(p, make, Arc::new(SumU64), io(p, 4)).unwrap_err();
    assert!(err.to_string().contains("deadlock"), "{err}");
}

#[test]
fn the_same_ring_with_receives_posted_first_completes() {
    let p = 5;
    let make = Arc::new(move |r: usize| {
        let mut prog = Program::new();
        prog.sendrecv(
            (r + 1) % p,
            vec![Piece::new(Buf::In, 0, 4)],
            (r + p - 1) % p,
            vec![Piece::new(Buf::Out, 0, 4)],
        );
        Ok(prog)
    });
    let res = run_programs(p, make, Arc::new(SumU64), io(p, 4)).unwrap();
    assert!(
        res.iter().all(|r| r.rounds == 1),
        "one full-duplex round each"
    );
}

#[test]
fn wrong_message_length_is_reported() {
    let make = Arc::new(|r: usize| {
        let mut prog = Program::new();
        if r == 0 {
            prog.send(1, vec![Piece::new(Buf::In, 0, 3)]);
        } else {
            prog.recv(0, vec![Piece::new(Buf::Out, 0, 4)]);
        }
        Ok(prog)
    });
    let err = run_programs(2, make, Arc::new(SumU64), io(2, 4)).unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
}

#[test]
fn send_buffer_modified_before_completion_is_reported() {
    let make = Arc::new(|r: usize| {
        let mut prog = Program::new();
        if r == 0 {
            prog.copy(Piece::new(Buf::In, 0, 4), Piece::new(Buf::Out, 0, 4));
            prog.isend(0, 1, vec![Piece::new(Buf::Out, 0, 4)]);
            prog.reduce(Piece::new(Buf::In, 0, 4), Piece::new(Buf::Out, 0, 4), true);
            prog.wait(0);
        } else {
            prog.recv(0, vec![Piece::new(Buf::Out, 0, 4)]);
        }
        Ok(prog)
    });
    let err = run_programs(2, make, Arc::new(SumU64), io(2, 4)).unwrap_err();
    assert!(err.to_string().contains("changed"), "{err}");
}
