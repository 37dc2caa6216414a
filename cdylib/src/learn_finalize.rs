//! The learned table's two ends: at `MPI_Init` (learning agreed on) every rank installs the
//! finalize hook, so that every rank takes part in the gather at `MPI_Finalize`, and rank 0
//! checks that it can write the path; at `MPI_Finalize` (the hook on `MPI_COMM_SELF`) every
//! rank's records go to rank 0 of `MPI_COMM_WORLD` (one gather of lengths, one of the
//! lines), which merges them and writes the table: to a temporary file renamed over the path
//! (never a half-written table), or, if that fails, to stderr with the reason (never a lost
//! run).

use super::{on, user_table, RECORDS};
use crate::consts;
use crate::state::{self, Global};
use mpi_sys::*;
use pcoll::learn::table::{learned_table, Record};
use std::io::Write;
use std::os::raw::{c_int, c_void};
use std::path::Path;

/// At `MPI_Init`, once the settings are agreed: with learning on, the process state (and
/// with it the finalize hook) on every rank, and rank 0's check of the path.
pub fn at_init() {
    let learning = crate::agree::var("PCOLL_LEARN").is_some_and(|v| !v.trim().is_empty());
    if !learning || state::disabled() {
        return;
    }
    let g = state::global();
    if let (Some(c), 0) = (crate::nodes::crowding().filter(|c| c.any), g.world_rank) {
        crate::state::say(format_args!(
            "pcoll: PCOLL_LEARN: a node runs more ranks than cores (this one: {} ranks on {} cores): cells below {} keep the table's decision (their timings would be the scheduler's)",
            c.ranks,
            c.cores,
            pcoll::tuning::size::format_size(pcoll::learn::CROWDED_MIN_BYTES)
        ));
    }
    if let (Some(path), 0) = (&g.cfg.learn, g.world_rank) {
        if let Err(e) = writable(path) {
            crate::state::say(format_args!(
                "pcoll: warning: PCOLL_LEARN={:?}: cannot write there ({e}); the learned table will be printed to stderr at MPI_Finalize instead",
                path.display()
            ));
        }
    }
}

/// Can `path` be written (without truncating it: it may be the table this run replays)?
/// Only a regular file is (through its symbolic links): opening a FIFO waits for a reader,
/// and the rename of [`write_atomically`] would replace a device node.
fn writable(path: &Path) -> std::io::Result<()> {
    let path = &target(path)?;
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(|_| ());
    }
    std::fs::File::create(path)?;
    std::fs::remove_file(path)
}

/// The file `path` names: its symbolic links followed (the table replaces the file they
/// point to, not the links), and an error for anything that exists but is not a regular
/// file (a directory, a FIFO, a device).
fn target(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let Ok(real) = std::fs::canonicalize(path) else {
        return Ok(path.to_path_buf()); // not there yet (or a dangling link: created through it)
    };
    if !std::fs::metadata(&real)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(real)
}

/// At `MPI_Finalize`, on every rank (learning on): gather the records to rank 0 of
/// `MPI_COMM_WORLD`, which writes the table.
pub fn at_finalize() {
    let Some(g) = state::try_global() else { return };
    if !on(g) {
        return;
    }
    // Never empty: an empty slice's pointer is 0x1, which is Open MPI's MPI_IN_PLACE.
    let mine: String = RECORDS
        .lock()
        .iter()
        .map(|r| r.to_line() + "\n")
        .chain(std::iter::once("\n".to_string()))
        .collect();
    let Some(all) = gather(mine.as_bytes(), g.world_rank) else {
        return;
    };
    if g.world_rank != 0 {
        return;
    }
    let text = String::from_utf8_lossy(&all);
    // A crowded node's small native winners are not raced, however close (`Record::crowded`).
    let crowded = crate::nodes::crowded();
    let records: Vec<Record> = text
        .lines()
        .filter_map(Record::from_line)
        .map(|r| Record { crowded, ..r })
        .collect();
    write_table(g, records);
}

/// Every rank's bytes, concatenated in rank order, at rank 0 (`Some(empty)` elsewhere;
/// `None` if MPI refused).
fn gather(mine: &[u8], rank: usize) -> Option<Vec<u8>> {
    let world = consts::comm_world();
    let mut size: c_int = 1;
    // SAFETY: out-pointer; MPI is initialised (we are in MPI_Finalize's first step).
    unsafe { PMPI_Comm_size(world, &mut size) };
    let n = size.max(1) as usize;
    let len = mine.len().min(c_int::MAX as usize) as c_int;
    let mut lens = vec![0 as c_int; n];
    // SAFETY: one int from each rank into `lens` (n ints) at rank 0.
    let rc = unsafe {
        PMPI_Gather(
            &len as *const c_int as *const c_void,
            1,
            consts::dt_int(),
            lens.as_mut_ptr() as *mut c_void,
            1,
            consts::dt_int(),
            0,
            world,
        )
    };
    if rc != consts::SUCCESS() {
        return None;
    }
    let mut displs = vec![0 as c_int; n];
    let mut total: usize = 0;
    for (d, &l) in displs.iter_mut().zip(&lens) {
        *d = total.min(c_int::MAX as usize) as c_int;
        total += l.max(0) as usize;
    }
    let mut all = vec![0u8; if rank == 0 { total.max(1) } else { 1 }];
    // An empty Vec's pointer is 1, which is MPI_IN_PLACE in Open MPI (erroneous at a
    // non-root): send from a real byte when this rank has nothing.
    let none = [0u8; 1];
    let send = if mine.is_empty() {
        none.as_ptr()
    } else {
        mine.as_ptr()
    };
    // SAFETY: `len` bytes from each rank; at rank 0 `all` holds the sum of `lens` at `displs`.
    let rc = unsafe {
        PMPI_Gatherv(
            send as *const c_void,
            len,
            consts::dt_byte(),
            all.as_mut_ptr() as *mut c_void,
            lens.as_ptr(),
            displs.as_ptr(),
            consts::dt_byte(),
            0,
            world,
        )
    };
    all.truncate(if rank == 0 { total } else { 0 });
    (rc == consts::SUCCESS()).then_some(all)
}

/// Rank 0: the learned table, written to `PCOLL_LEARN`'s path, or to stderr if it cannot be.
fn write_table(g: &Global, records: Vec<Record>) {
    let Some(path) = &g.cfg.learn else { return };
    let n = records.len();
    let pcoll_cells = records.iter().filter(|r| r.winner != 0).count();
    let p = g.cfg.learn_params();
    let mut header = vec![
        format!(
            "learned by pcoll {} (PCOLL_LEARN) on {} ({}), from the table {}",
            env!("CARGO_PKG_VERSION"),
            g.mpi.describe(),
            state::running().1,
            g.table.origin()
        ),
        format!(
            "{n} cells decided: {pcoll_cells} by one of pcoll's algorithms (raced against native where replayed), the rest native; at least {} timed calls per candidate ({} below {}) in blocks whose first call is a warm-up, margin {:.0}% and {:.1} us",
            p.timed,
            p.timed_small(),
            pcoll::tuning::size::format_size(pcoll::learn::SMALL_CELL),
            100.0 * p.margin,
            pcoll::learn::MIN_GAIN_NS as f64 / 1e3
        ),
        "replay: PCOLL_TUNING=<this file> (a cell not learned: the rules after the learned ones, then the model)".to_string(),
    ];
    if crate::nodes::crowded() {
        header.push(format!(
            "learned with more ranks than cores on a node: cells below {} not learned, native winners below {} not raced",
            pcoll::tuning::size::format_size(pcoll::learn::CROWDED_MIN_BYTES),
            pcoll::tuning::size::format_size(pcoll::learn::SMALL_CELL)
        ));
    }
    let text = match learned_table(records, &g.table, user_table(g), &header) {
        Ok(t) => t,
        Err(e) => {
            crate::state::say(format_args!("pcoll: error: PCOLL_LEARN: the learned table does not validate (a defect of pcoll, please report):\n{e}"));
            return;
        }
    };
    match write_atomically(path, &text) {
        Ok(()) => crate::state::say(format_args!(
            "pcoll: PCOLL_LEARN: {n} cells learned ({pcoll_cells} on pcoll's algorithms), written to {}",
            path.display()
        )),
        Err(e) => {
            crate::state::say(format_args!(
                "pcoll: error: PCOLL_LEARN={:?}: cannot write the learned table ({e}); here it is:",
                path.display()
            ));
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
    }
}

/// `text` into `path` through a temporary file beside it and a rename.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let path = &target(path)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let r = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn the_table_is_written_to_a_regular_file_only() {
        let dir = std::env::temp_dir().join(format!("pcoll-learn-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.toml");
        std::fs::write(&file, "old").unwrap();
        // A symbolic link: the file it points to is replaced, the link stays.
        let link = dir.join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_atomically(&link, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        // Not there yet: created.
        let fresh = dir.join("fresh.toml");
        writable(&fresh).unwrap();
        assert!(!fresh.exists(), "the check leaves nothing behind");
        write_atomically(&fresh, "x").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "x");
        // A directory and a FIFO are refused (opening a FIFO would wait for a reader), and
        // left as they were.
        assert!(writable(&dir).is_err());
        let fifo = dir.join("fifo");
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(writable(&fifo).is_err());
            assert!(write_atomically(&fifo, "x").is_err());
            assert!(std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
