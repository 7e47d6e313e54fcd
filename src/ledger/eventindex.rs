//! The event index: where each event sits in the log file, as one fixed-size record per seq in
//! a flat file beside it (`events.idx`).
//!
//! Record `s` (bytes `12·s .. 12·s + 12`) is the slot of event `s` in the log file: offset (u64)
//! and length (u32), big-endian. A record of zeros names no event (no frame starts at byte 0).
//! Records are written once the frames they point into are durable, and made durable lazily:
//! how many of them are durable is part of the store's index mark, and the records past it are
//! written again at open from the frames past the mark (docs/ledger-format.md §6).
//!
//! The writer appends through [`EventIndex`]; any thread reads through [`EventIndexReader`]
//! (positioned reads, and a count published after the records it covers are written).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::LedgerError;
use super::logfile::Slot;

/// The index file's name in the ledger directory.
pub const EVENT_INDEX_FILE: &str = "events.idx";

/// Bytes of one record.
const RECORD: u64 = 12;

/// Records read at once by a pass over many events.
const CHUNK_RECORDS: u64 = 4096;

/// The index as its one writer holds it.
#[derive(Debug)]
pub struct EventIndex {
    file: File,
    reader: Arc<EventIndexReader>,
}

/// Reads of the index by any thread.
#[derive(Debug)]
pub struct EventIndexReader {
    file: File,
    /// Records `0..count` may be read: seq `count - 1` is the highest indexed.
    count: AtomicU64,
}

impl EventIndex {
    /// Opens (or creates) the index at `path`, holding no record until [`EventIndex::keep`]
    /// says how many of the file's are to be trusted.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let file = super::private::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let reader = Arc::new(EventIndexReader {
            file: file.try_clone()?,
            count: AtomicU64::new(0),
        });
        Ok(Self { file, reader })
    }

    /// What readers beside the writer read the index through.
    pub fn reader(&self) -> Arc<EventIndexReader> {
        self.reader.clone()
    }

    /// Reads of the index by its writer.
    pub fn reads(&self) -> &EventIndexReader {
        &self.reader
    }

    /// Keeps the first `count` records (those the durable mark covers) and drops the rest.
    /// Fails when the file holds fewer: records the mark says are durable are missing.
    pub fn keep(&mut self, count: u64) -> Result<(), LedgerError> {
        let len = self.file.metadata()?.len();
        let wanted = count
            .checked_mul(RECORD)
            .ok_or_else(|| LedgerError::Corrupt("event index mark".into()))?;
        if len < wanted {
            return Err(LedgerError::Corrupt(format!(
                "{EVENT_INDEX_FILE} holds {} records, its mark says {count} are durable: the \
                 file was cut or replaced; restore the ledger directory from a backup",
                len / RECORD
            )));
        }
        if len != wanted {
            self.file.set_len(wanted)?;
        }
        self.reader.count.store(count, Ordering::Release);
        Ok(())
    }

    /// Writes the records of `entries` (seq, slot), then lets readers see them. Runs of
    /// consecutive seqs are written at once.
    pub fn put(&mut self, entries: &[(u64, Slot)]) -> Result<(), LedgerError> {
        let mut run: Vec<u8> = Vec::with_capacity(entries.len() * RECORD as usize);
        let mut run_start = 0;
        let mut highest = None;
        for (i, (seq, slot)) in entries.iter().enumerate() {
            if i > 0 && *seq != entries[i - 1].0 + 1 {
                self.file.write_all_at(&run, run_start * RECORD)?;
                run.clear();
            }
            if run.is_empty() {
                run_start = *seq;
            }
            run.extend_from_slice(&slot.encode());
            highest = highest.max(Some(*seq));
        }
        if !run.is_empty() {
            self.file.write_all_at(&run, run_start * RECORD)?;
        }
        if let Some(highest) = highest {
            self.reader.count.fetch_max(highest + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Makes the record of `seq` name no event. For tamper drills only.
    pub fn remove(&mut self, seq: u64) -> Result<(), LedgerError> {
        if seq < self.count() {
            self.file
                .write_all_at(&[0; RECORD as usize], seq * RECORD)?;
        }
        Ok(())
    }

    /// Makes every record written so far durable.
    pub fn sync(&self) -> Result<(), LedgerError> {
        self.file.sync_data()?;
        Ok(())
    }

    /// How many records there are: one past the highest seq indexed.
    pub fn count(&self) -> u64 {
        self.reader.count.load(Ordering::Acquire)
    }
}

impl EventIndexReader {
    /// Where event `seq` sits in the log file, if it is indexed.
    pub fn slot(&self, seq: u64) -> Result<Option<Slot>, LedgerError> {
        if seq >= self.count.load(Ordering::Acquire) {
            return Ok(None);
        }
        let mut record = [0; RECORD as usize];
        self.file.read_exact_at(&mut record, seq * RECORD)?;
        decode(&record)
    }

    /// The highest indexed seq.
    pub fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        let mut seq = self.count.load(Ordering::Acquire);
        // The last record names an event unless a tamper drill removed it.
        while seq > 0 {
            seq -= 1;
            if self.slot(seq)?.is_some() {
                return Ok(Some(seq));
            }
        }
        Ok(None)
    }

    /// `(seq, offset, len)` of every indexed event with seq ≥ `from`, ascending, read a chunk
    /// of records at a time; records past the count when the pass starts are not read.
    pub fn slots_from(
        &self,
        from: u64,
    ) -> impl Iterator<Item = Result<(u64, u64, u64), LedgerError>> + '_ {
        let end = self.count.load(Ordering::Acquire);
        let mut next = from;
        let mut chunk: std::vec::IntoIter<(u64, Slot)> = Vec::new().into_iter();
        let mut failed = false;
        std::iter::from_fn(move || {
            loop {
                if let Some((seq, slot)) = chunk.next() {
                    return Some(Ok((seq, slot.offset, u64::from(slot.len))));
                }
                if failed || next >= end {
                    return None;
                }
                let upto = end.min(next.saturating_add(CHUNK_RECORDS));
                match self.read_records(next, upto) {
                    Ok(records) => chunk = records.into_iter(),
                    Err(e) => {
                        failed = true;
                        return Some(Err(e));
                    }
                }
                next = upto;
            }
        })
    }

    /// The indexed events among seqs `from..upto`.
    fn read_records(&self, from: u64, upto: u64) -> Result<Vec<(u64, Slot)>, LedgerError> {
        let mut bytes = vec![0; usize::try_from((upto - from) * RECORD).unwrap_or(usize::MAX)];
        self.file.read_exact_at(&mut bytes, from * RECORD)?;
        let mut out = Vec::with_capacity(bytes.len() / RECORD as usize);
        for (i, record) in bytes.chunks_exact(RECORD as usize).enumerate() {
            if let Some(slot) = decode(record)? {
                out.push((from + i as u64, slot));
            }
        }
        Ok(out)
    }
}

/// A record's slot; `None` for a record of zeros.
fn decode(record: &[u8]) -> Result<Option<Slot>, LedgerError> {
    if record.iter().all(|b| *b == 0) {
        return Ok(None);
    }
    Slot::decode(record)
        .map(Some)
        .ok_or_else(|| LedgerError::Corrupt("event index record".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(offset: u64) -> Slot {
        Slot { offset, len: 7 }
    }

    #[test]
    fn records_are_read_back_and_a_reopen_keeps_what_the_mark_covers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENT_INDEX_FILE);
        let mut index = EventIndex::open(&path).unwrap();
        index.keep(0).unwrap();
        index
            .put(&[(0, slot(20)), (1, slot(30)), (2, slot(40))])
            .unwrap();
        // A gap (a seq not written) reads as no event.
        index.put(&[(4, slot(60)), (5, slot(70))]).unwrap();
        let reader = index.reader();
        assert_eq!(reader.slot(1).unwrap(), Some(slot(30)));
        assert_eq!(reader.slot(3).unwrap(), None);
        assert_eq!(reader.slot(6).unwrap(), None);
        assert_eq!(reader.last_seq().unwrap(), Some(5));
        let from: Vec<_> = reader.slots_from(1).map(Result::unwrap).collect();
        assert_eq!(from, vec![(1, 30, 7), (2, 40, 7), (4, 60, 7), (5, 70, 7)]);
        index.remove(5).unwrap();
        assert_eq!(reader.last_seq().unwrap(), Some(4));
        index.sync().unwrap();
        drop((index, reader));

        let mut again = EventIndex::open(&path).unwrap();
        again.keep(3).unwrap();
        assert_eq!(again.reader().last_seq().unwrap(), Some(2));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 * RECORD);
        // A mark past what the file holds is refused.
        assert!(matches!(again.keep(9), Err(LedgerError::Corrupt(_))));
    }

    #[test]
    fn a_pass_reads_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = EventIndex::open(&dir.path().join(EVENT_INDEX_FILE)).unwrap();
        let n = CHUNK_RECORDS * 2 + 5;
        let entries: Vec<_> = (0..n).map(|s| (s, slot(100 + s))).collect();
        index.put(&entries).unwrap();
        let seqs: Vec<u64> = index.reader().slots_from(3).map(|r| r.unwrap().0).collect();
        assert_eq!(seqs, (3..n).collect::<Vec<_>>());
    }
}
