//! The erasable text store: one append-only file of text records, overwritten in place when a
//! text is erased.
//!
//! Texts live outside sled on purpose: sled keeps a removed value's bytes in its log segments
//! until it happens to clean them, so a text stored there could not be erased from disk. Here a
//! record sits at a fixed offset (kept in the store's index) and erasure overwrites its salt
//! and text with zeros and syncs the file. This module owns the file's bytes and nothing else:
//! which record lives where, and when a record is durable, is the store's business.
//!
//! File layout: the 21-byte magic `thinkledger texts v1\n`, then records, each
//! `len: u32 LE` (of salt + text), `commitment: [u8; 32]`, `salt: [u8; 32]`, `text: UTF-8`.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::LedgerError;
use super::hash::SALT_LEN;
use super::store::TextRecord;

const MAGIC: &[u8] = b"thinkledger texts v1\n";
/// Bytes before a record's salt: its length and its commitment.
const HEADER: u64 = 4 + 32;

/// Where one record sits in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub offset: u64,
    /// Bytes of salt + text.
    pub len: u32,
}

impl Slot {
    /// The stored form in the store's index: offset and length, big-endian.
    pub fn encode(&self) -> [u8; 12] {
        let mut out = [0; 12];
        out[..8].copy_from_slice(&self.offset.to_be_bytes());
        out[8..].copy_from_slice(&self.len.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let offset = u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
        let len = u32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?);
        (bytes.len() == 12).then_some(Self { offset, len })
    }

    /// The first byte after the record.
    pub fn end(&self) -> u64 {
        self.offset + HEADER + u64::from(self.len)
    }
}

/// Whether the store's index holds a record with this commitment at this slot.
pub type Known<'a> = dyn Fn(&[u8; 32], Slot) -> Result<bool, LedgerError> + 'a;

/// The open text file.
#[derive(Debug)]
pub struct TextFile {
    file: File,
    /// Where the next record goes.
    end: u64,
    /// Whether records were written since the last sync.
    dirty: bool,
}

impl TextFile {
    /// Opens (or creates) the file. `end` is where the store's last known record ends; the
    /// records right after it that `known` still vouches for (commitment and slot) are kept,
    /// and anything after those (records of a batch that never became durable) is cut off.
    pub fn open(path: &Path, end: Option<u64>, known: &Known<'_>) -> Result<Self, LedgerError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            file.write_all(MAGIC)?;
            file.sync_all()?;
        } else {
            let mut magic = vec![0; MAGIC.len()];
            file.read_exact(&mut magic).map_err(|_| {
                LedgerError::Corrupt(format!("{} is not a thinkledger text file", path.display()))
            })?;
            if magic != MAGIC {
                return Err(LedgerError::Corrupt(format!(
                    "{} is not a thinkledger text file",
                    path.display()
                )));
            }
        }
        let mut end = end.unwrap_or(MAGIC.len() as u64).max(MAGIC.len() as u64);
        let file_len = file.metadata()?.len();
        while end + HEADER <= file_len {
            let mut header = [0u8; HEADER as usize];
            file.seek(SeekFrom::Start(end))?;
            file.read_exact(&mut header)?;
            let (len, commitment) = header.split_at(4);
            let slot = Slot {
                offset: end,
                len: u32::from_le_bytes(len.try_into().unwrap_or_default()),
            };
            let commitment: [u8; 32] = commitment.try_into().unwrap_or_default();
            if slot.end() > file_len || !known(&commitment, slot)? {
                break;
            }
            end = slot.end();
        }
        if file_len > end {
            file.set_len(end)?;
            file.sync_all()?;
        }
        Ok(Self {
            file,
            end,
            dirty: false,
        })
    }

    /// Appends records with one write (not yet durable: see [`TextFile::sync`]); their slots,
    /// in order.
    pub fn append_all(
        &mut self,
        records: &[([u8; 32], TextRecord)],
    ) -> Result<Vec<Slot>, LedgerError> {
        let total: usize = records
            .iter()
            .map(|(_, r)| HEADER as usize + SALT_LEN + r.text.len())
            .sum();
        let mut bytes = Vec::with_capacity(total);
        let mut slots = Vec::with_capacity(records.len());
        let mut end = self.end;
        for (commitment, record) in records {
            let len = u32::try_from(SALT_LEN + record.text.len())
                .map_err(|_| LedgerError::NotCanonicalizable("text larger than 4 GiB".into()))?;
            bytes.extend_from_slice(&len.to_le_bytes());
            bytes.extend_from_slice(commitment);
            bytes.extend_from_slice(&record.salt);
            bytes.extend_from_slice(record.text.as_bytes());
            let slot = Slot { offset: end, len };
            end = slot.end();
            slots.push(slot);
        }
        if !bytes.is_empty() {
            self.file.seek(SeekFrom::Start(self.end))?;
            self.file.write_all(&bytes)?;
            self.end = end;
            self.dirty = true;
        }
        Ok(slots)
    }

    /// Makes every appended record durable.
    pub fn sync(&mut self) -> Result<(), LedgerError> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Reads the record at `slot`, if it is the record of `commitment` and still holds text.
    /// A slot whose bytes are not that record (never made durable) or were erased gives `None`.
    pub fn read(
        &self,
        slot: Slot,
        commitment: &[u8; 32],
    ) -> Result<Option<TextRecord>, LedgerError> {
        if !self.holds(slot) {
            return Ok(None);
        }
        let mut bytes = vec![0; record_len(slot)];
        let mut file = &self.file;
        file.seek(SeekFrom::Start(slot.offset))?;
        file.read_exact(&mut bytes)?;
        decode(&bytes, slot, commitment)
    }

    /// Reads the records at `slots` (with the commitment each should hold), in the order given,
    /// each as [`TextFile::read`] would. Slots in ascending offset order make this one forward
    /// pass over the file through a large buffer instead of a seek and a read per record.
    pub fn read_in_order(
        &self,
        slots: Vec<([u8; 32], Slot)>,
    ) -> impl Iterator<Item = ([u8; 32], Result<Option<TextRecord>, LedgerError>)> + '_ {
        let mut reader = BufReader::with_capacity(1 << 20, &self.file);
        // Where `reader` stands in the file; `None` until the first seek.
        let mut at: Option<u64> = None;
        let mut bytes = Vec::new();
        slots.into_iter().map(move |(commitment, slot)| {
            if !self.holds(slot) {
                return (commitment, Ok(None));
            }
            let mut read = || -> Result<Option<TextRecord>, LedgerError> {
                match at {
                    Some(pos) if pos <= slot.offset => {
                        let ahead = i64::try_from(slot.offset - pos)
                            .map_err(|_| LedgerError::Corrupt("text slot offset".into()))?;
                        reader.seek_relative(ahead)?;
                    }
                    _ => {
                        reader.seek(SeekFrom::Start(slot.offset))?;
                    }
                }
                at = None;
                bytes.resize(record_len(slot), 0);
                reader.read_exact(&mut bytes)?;
                at = Some(slot.end());
                decode(&bytes, slot, &commitment)
            };
            (commitment, read())
        })
    }

    /// Whether `slot` lies within the records this file knows of and can hold a salt.
    fn holds(&self, slot: Slot) -> bool {
        slot.end() <= self.end && (slot.len as usize) >= SALT_LEN
    }

    /// Overwrites the salt and text of the record at `slot` with zeros (not yet durable: see
    /// [`TextFile::sync`]). Its length and commitment stay, so the file still parses.
    pub fn erase(&mut self, slot: Slot) -> Result<(), LedgerError> {
        if slot.end() > self.end {
            return Ok(());
        }
        self.file.seek(SeekFrom::Start(slot.offset + HEADER))?;
        let zeros = vec![0; slot.len as usize];
        self.file.write_all(&zeros)?;
        self.dirty = true;
        Ok(())
    }
}

/// Bytes of the record at `slot`: header, salt and text.
/// The text file opened again for reading only, by any thread: each read is positioned
/// (`pread`), so readers share no file offset with each other or with the writer.
#[derive(Debug)]
pub struct TextReader {
    file: File,
}

impl TextReader {
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        Ok(Self {
            file: File::open(path)?,
        })
    }

    /// The record at `slot`, as [`TextFile::read`] gives it. The slot comes from the store's
    /// index, which only names records already durable.
    pub fn read(
        &self,
        slot: Slot,
        commitment: &[u8; 32],
    ) -> Result<Option<TextRecord>, LedgerError> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0; record_len(slot)];
        self.file.read_exact_at(&mut bytes, slot.offset)?;
        decode(&bytes, slot, commitment)
    }
}

fn record_len(slot: Slot) -> usize {
    // A u32 length plus a 36-byte header always fits in usize on the platforms Rust supports.
    usize::try_from(HEADER + u64::from(slot.len)).unwrap_or(usize::MAX)
}

/// The record of `commitment` in `bytes` (read at `slot`), or `None` if they hold another
/// record or an erased one.
fn decode(
    bytes: &[u8],
    slot: Slot,
    commitment: &[u8; 32],
) -> Result<Option<TextRecord>, LedgerError> {
    let (len, rest) = bytes.split_at(4);
    let (stored, rest) = rest.split_at(32);
    if len != slot.len.to_le_bytes() || stored != commitment {
        return Ok(None);
    }
    let (salt, text) = rest.split_at(SALT_LEN);
    if salt.iter().all(|b| *b == 0) && text.iter().all(|b| *b == 0) {
        return Ok(None);
    }
    let salt: [u8; SALT_LEN] = salt
        .try_into()
        .map_err(|_| LedgerError::Corrupt("text record salt".into()))?;
    let text = String::from_utf8(text.to_vec())
        .map_err(|_| LedgerError::Corrupt("text record is not UTF-8".into()))?;
    Ok(Some(TextRecord { salt, text }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str) -> TextRecord {
        TextRecord {
            salt: [7; SALT_LEN],
            text: text.into(),
        }
    }

    #[test]
    fn records_round_trip_are_erased_in_place_and_torn_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("texts");
        let mut file = TextFile::open(&path, None, &|_, _| Ok(false)).unwrap();
        let a = file
            .append_all(&[([1; 32], record("first secret"))])
            .unwrap()[0];
        let b = file.append_all(&[([2; 32], record("second"))]).unwrap()[0];
        file.sync().unwrap();
        assert_eq!(
            file.read(a, &[1; 32]).unwrap(),
            Some(record("first secret"))
        );
        assert_eq!(
            file.read(a, &[2; 32]).unwrap(),
            None,
            "another commitment's slot"
        );
        file.erase(a).unwrap();
        file.sync().unwrap();
        assert_eq!(file.read(a, &[1; 32]).unwrap(), None);
        assert_eq!(file.read(b, &[2; 32]).unwrap(), Some(record("second")));
        // In order, out of order, and a slot holding another record: as `read` says.
        for slots in [
            vec![([1; 32], a), ([2; 32], b)],
            vec![([2; 32], b), ([1; 32], a), ([1; 32], b)],
        ] {
            let got: Vec<_> = file
                .read_in_order(slots.clone())
                .map(|(_, r)| r.unwrap())
                .collect();
            let want: Vec<_> = slots
                .iter()
                .map(|(c, s)| file.read(*s, c).unwrap())
                .collect();
            assert_eq!(got, want);
        }
        let c = file.append_all(&[([3; 32], record("torn"))]).unwrap()[0];
        drop(file);
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.windows(12).any(|w| w == b"first secret"));
        // Reopened with the index knowing only a and b: c's bytes are cut off.
        let file = TextFile::open(&path, Some(b.end()), &|_, _| Ok(false)).unwrap();
        assert_eq!(file.read(c, &[3; 32]).unwrap(), None);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), b.end());
        assert_eq!(Slot::decode(&b.encode()), Some(b));
    }
}
