//! Progress of long runs on rank 0's stderr: a one-line bar on a terminal, plain
//! `progress:` lines otherwise (mpirun forwards stderr through a pipe).

use std::io::{IsTerminal, Write};
use std::time::Instant;

pub struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
    enabled: bool,
    last_line: Instant,
}

impl Progress {
    /// `enabled` only on the rank that prints (rank 0 of MPI_COMM_WORLD).
    pub fn new(total: usize, enabled: bool) -> Progress {
        Progress {
            total: total.max(1),
            done: 0,
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            enabled,
            last_line: Instant::now(),
        }
    }

    /// One case finished; `what` names it.
    pub fn tick(&mut self, what: &str) {
        self.done += 1;
        if !self.enabled {
            return;
        }
        let el = self.start.elapsed().as_secs_f64();
        let eta = el / self.done as f64 * (self.total - self.done.min(self.total)) as f64;
        let pct = 100.0 * self.done as f64 / self.total as f64;
        let line = if self.tty {
            let w = 30;
            let fill = (w * self.done / self.total).min(w);
            format!(
                "\r[{}{}] {:>3.0}% {}/{} {:<32} {:>5.0}s eta {:>4.0}s",
                "#".repeat(fill),
                "-".repeat(w - fill),
                pct,
                self.done,
                self.total,
                what,
                el,
                eta
            )
        } else {
            // Plain lines at most every 2 s (and always for the last case).
            if self.done < self.total && self.last_line.elapsed().as_secs_f64() < 2.0 {
                return;
            }
            self.last_line = Instant::now();
            format!(
                "progress: {}/{} ({pct:.0}%) {what}, elapsed {el:.0} s, eta {eta:.0} s\n",
                self.done, self.total
            )
        };
        let mut e = std::io::stderr();
        let _ = e.write_all(line.as_bytes());
        let _ = e.flush();
    }

    /// Ends the bar's line on a terminal.
    pub fn finish(&self) {
        if self.enabled && self.tty {
            let _ = std::io::stderr().write_all(b"\n");
        }
    }
}
