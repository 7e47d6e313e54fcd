//! The log file: every event and every erasable text, in one append-only file of frames, one
//! frame per batch, made durable by one `fdatasync`.
//!
//! The file is the truth; the store's sled index (seq → where an event sits, commitment →
//! where a text sits, session → seqs) only points into it and is rebuilt from it for any frame
//! past the index's mark ([`LogFile::recover`]). Texts are erased by overwriting their salt and
//! text with zeros in place. This module owns the file's bytes: what an entry means, and when
//! the index is durable, are the store's business.
//!
//! Layout (docs/ledger-format.md §6): the 19-byte magic `thinkledger log v1\n`, then frames.
//! A frame is `"TLBF"`, `body length: u32 LE`, `BLAKE3(body): [u8; 32]`, then the body: entries,
//! each a tag byte and its fields:
//! - `E`: `seq: u64 LE`, `session length: u16 LE` (0: none), `session id: ASCII`,
//!   `length: u32 LE`, the event's stored bytes;
//! - `T`: a text record, `length: u32 LE` (of salt + text), `commitment: [u8; 32]`,
//!   `salt: [u8; 32]`, `text: UTF-8`.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};

use super::LedgerError;
use super::hash::SALT_LEN;
use super::store::{StagedEvent, TextRecord};
use crate::events::SessionId;

/// The log file inside the store's directory.
pub const LOG_FILE: &str = "log.dat";

const MAGIC: &[u8] = b"thinkledger log v1\n";
const FRAME_MAGIC: &[u8; 4] = b"TLBF";
/// Bytes before a frame's body: magic, body length, checksum.
const FRAME_HEADER: usize = 4 + 4 + 32;
const EVENT: u8 = b'E';
const TEXT: u8 = b'T';
/// Bytes of a text record before its salt: its length and its commitment.
const TEXT_HEADER: u64 = 4 + 32;
/// Bytes of zeros the file is extended by, written and made durable ahead of the frames that
/// will overwrite them: an `fdatasync` after a write that grows the file must also commit the
/// new size to the file system's journal; one within bytes already written does not (on this
/// machine's ext4, one 1.5 KB frame: 153–182 µs appended, 93–107 µs over written zeros).
const PREALLOCATE: u64 = 1 << 20;

/// Where something sits in the file: for an event, its stored bytes; for a text, its record
/// (offset of the record, `len` = bytes of salt + text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub offset: u64,
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

    /// Bytes a text record at this slot spans: header, salt and text.
    fn text_record_len(&self) -> u64 {
        TEXT_HEADER + u64::from(self.len)
    }
}

/// What one frame holds, for the store's index.
#[derive(Debug, Default)]
pub struct Framed {
    pub events: Vec<(u64, Option<SessionId>, Slot)>,
    pub texts: Vec<([u8; 32], Slot)>,
    /// The first byte after the frame.
    pub end: u64,
}

/// The open log file, as its one writer holds it.
#[derive(Debug)]
pub struct LogFile {
    file: File,
    /// Where the next frame goes.
    end: u64,
    /// The file's length: from `end` on, zeros written ahead ([`PREALLOCATE`]).
    allocated: Arc<Allocated>,
    /// The thread that writes zeros ahead, once started: it is sent the length to reach, and
    /// joined when the file is closed (no zeros land after that).
    ahead: Option<(mpsc::Sender<u64>, std::thread::JoinHandle<()>)>,
    /// Whether bytes were written since the last sync.
    dirty: bool,
}

impl LogFile {
    /// Where the next frame goes: the bytes of every frame so far, with the file's magic.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Opens (or creates) the file, without judging its frames (see [`LogFile::recover`]).
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let mut file = super::private::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        if len < MAGIC.len() as u64 {
            // New, or created by an open that never finished writing the magic.
            file.set_len(0)?;
            file.write_all(MAGIC)?;
            file.sync_all()?;
        } else {
            let mut magic = vec![0; MAGIC.len()];
            file.read_exact(&mut magic)?;
            if magic != MAGIC {
                return Err(LedgerError::Corrupt(format!(
                    "{} is not a thinkledger log file",
                    path.display()
                )));
            }
        }
        let allocated = Arc::new(Allocated {
            len: Mutex::new(file.metadata()?.len()),
        });
        Ok(Self {
            file,
            end: MAGIC.len() as u64,
            allocated,
            ahead: None,
            dirty: false,
        })
    }

    /// Empties the file of frames (a copy into it that starts over).
    pub fn reset(&mut self) -> Result<(), LedgerError> {
        self.file.set_len(Self::start())?;
        self.file.sync_all()?;
        self.end = Self::start();
        *self.allocated.lock() = Self::start();
        Ok(())
    }

    /// Where the first frame goes.
    pub fn start() -> u64 {
        MAGIC.len() as u64
    }

    /// Reads the frames from `from` (the end of the last frame the index holds) to the end of
    /// the file, hands each whole one to `index` in order, and cuts off the file after the last
    /// whole one: what follows it is a frame that never became durable (a torn write, or one
    /// whose `fdatasync` did not return), so no caller of it was answered. Zeros written ahead
    /// are kept. Returns how many frames were handed over.
    pub fn recover(
        &mut self,
        from: u64,
        index: &mut dyn FnMut(Framed) -> Result<(), LedgerError>,
    ) -> Result<u64, LedgerError> {
        let file_len = self.file.metadata()?.len();
        if from > file_len || from < Self::start() {
            return Err(LedgerError::Corrupt(format!(
                "the index ends at byte {from} of {LOG_FILE}, which holds {file_len} bytes"
            )));
        }
        let mut reader = BufReader::with_capacity(1 << 20, &self.file);
        reader.seek(SeekFrom::Start(from))?;
        let mut at = from;
        let mut frames = 0;
        let mut body = Vec::new();
        loop {
            let mut header = [0u8; FRAME_HEADER];
            if file_len - at < FRAME_HEADER as u64 || reader.read_exact(&mut header).is_err() {
                break;
            }
            let body_at = at + FRAME_HEADER as u64;
            let Some(len) = announced_len(&header, body_at, file_len) else {
                break;
            };
            body.resize(len as usize, 0);
            reader.read_exact(&mut body)?;
            let Some(framed) = whole(&header, &body, body_at) else {
                break;
            };
            at = framed.end;
            index(framed)?;
            frames += 1;
        }
        drop(reader);
        if file_len > at && !self.zeros_from(at, file_len)? {
            // A torn write is always the last frame: the writer writes a frame only once the
            // one before it is durable. A whole frame after the bad bytes means they were
            // damaged, and cutting them off would lose that frame: refused instead.
            if let Some(next) = self.whole_frame_after(at, file_len)? {
                return Err(LedgerError::Corrupt(format!(
                    "{LOG_FILE} holds damaged bytes at offset {at}, followed by a whole frame at \
                     offset {next}: not a torn write, so nothing was cut off; restore the \
                     ledger directory from a backup"
                )));
            }
            tracing::warn!(
                cut = file_len - at,
                at,
                "the log ends in a frame that never became durable; cutting it off"
            );
            self.file.set_len(at)?;
            self.file.sync_all()?;
        }
        self.end = at;
        *self.allocated.lock() = self.file.metadata()?.len();
        Ok(frames)
    }

    /// The offset of the first whole frame that starts after `from`, if any.
    fn whole_frame_after(&self, from: u64, file_len: u64) -> Result<Option<u64>, LedgerError> {
        let mut buf = vec![0u8; 1 << 20];
        let mut pos = from + 1;
        while pos + FRAME_HEADER as u64 <= file_len {
            let n = usize::try_from((file_len - pos).min(buf.len() as u64)).unwrap_or(buf.len());
            self.file.read_exact_at(&mut buf[..n], pos)?;
            for (i, window) in buf[..n].windows(FRAME_MAGIC.len()).enumerate() {
                if window == FRAME_MAGIC && self.whole_frame_at(pos + i as u64, file_len)? {
                    return Ok(Some(pos + i as u64));
                }
            }
            if n < buf.len() {
                break;
            }
            // The next chunk starts where a magic cut in two by this one begins.
            pos += (n - (FRAME_MAGIC.len() - 1)) as u64;
        }
        Ok(None)
    }

    /// Whether a whole frame (magic, length within the file, checksum, entries) starts at `at`.
    fn whole_frame_at(&self, at: u64, file_len: u64) -> Result<bool, LedgerError> {
        let mut header = [0u8; FRAME_HEADER];
        if file_len - at < FRAME_HEADER as u64 {
            return Ok(false);
        }
        self.file.read_exact_at(&mut header, at)?;
        let body_at = at + FRAME_HEADER as u64;
        let Some(len) = announced_len(&header, body_at, file_len) else {
            return Ok(false);
        };
        let mut body = vec![0u8; len as usize];
        self.file.read_exact_at(&mut body, body_at)?;
        Ok(whole(&header, &body, body_at).is_some())
    }

    /// Whether the bytes from `from` to `to` are all zeros.
    fn zeros_from(&self, from: u64, to: u64) -> Result<bool, LedgerError> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut at = from;
        while at < to {
            let n = usize::try_from((to - at).min(buf.len() as u64)).unwrap_or(buf.len());
            self.file.read_exact_at(&mut buf[..n], at)?;
            if buf[..n].iter().any(|b| *b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }

    /// Appends one frame holding `events` and `texts` with one write (not yet durable: see
    /// [`LogFile::sync`]); where each entry sits.
    pub fn append(
        &mut self,
        events: &[StagedEvent],
        texts: &[([u8; 32], TextRecord)],
    ) -> Result<Framed, LedgerError> {
        let (bytes, mut framed) = frame(self.end, events, texts)?;
        self.write_frame(&bytes)?;
        framed.end = self.end;
        Ok(framed)
    }

    fn write_frame(&mut self, bytes: &[u8]) -> Result<(), LedgerError> {
        let needed = self.end + bytes.len() as u64;
        let allocated = *self.allocated.lock();
        if needed > allocated {
            // The thread ahead fell behind: zeros up to the frame's end, written here.
            self.allocated.extend(&self.file, needed)?;
        }
        if needed + PREALLOCATE / 2 > allocated {
            self.extend_ahead(needed + PREALLOCATE)?;
        }
        #[cfg(debug_assertions)]
        if crash_drill::torn_write() {
            // Half a frame reaches the file, then the process dies.
            self.file
                .write_all_at(&bytes[..bytes.len() / 2], self.end)?;
            crash_drill::abort("in the middle of writing a frame");
        }
        self.file.write_all_at(bytes, self.end)?;
        self.end += bytes.len() as u64;
        self.dirty = true;
        Ok(())
    }

    /// Asks the thread ahead (started on first need) to have zeros durable up to `to`.
    fn extend_ahead(&mut self, to: u64) -> Result<(), LedgerError> {
        if self.ahead.is_none() {
            let (tx, rx) = mpsc::channel::<u64>();
            let (file, allocated) = (self.file.try_clone()?, self.allocated.clone());
            let spawned = std::thread::Builder::new()
                .name("thinkledger-log-ahead".into())
                .spawn(move || {
                    while let Ok(mut to) = rx.recv() {
                        // Only the latest request matters.
                        while let Ok(later) = rx.try_recv() {
                            to = to.max(later);
                        }
                        if let Err(e) = allocated.extend(&file, to) {
                            tracing::warn!(error = %e, "writing zeros ahead of the log failed");
                        }
                    }
                });
            match spawned {
                Ok(handle) => self.ahead = Some((tx, handle)),
                // Then the writer extends the file itself, a frame at a time, when it must.
                Err(e) => tracing::warn!(error = %e, "no thread to write zeros ahead of the log"),
            }
        }
        if let Some((ahead, _)) = &self.ahead {
            // A thread that is gone leaves the writer to extend the file itself.
            let _ = ahead.send(to);
        }
        Ok(())
    }

    /// Makes every appended frame durable.
    pub fn sync(&mut self) -> Result<(), LedgerError> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Overwrites the salt and text of the text record at `slot` with zeros (not yet durable:
    /// see [`LogFile::sync`]); its length and commitment stay. The frame's checksum no longer
    /// matches: the store erases only in frames its durable index covers, which are never
    /// judged again.
    pub fn erase(&mut self, slot: Slot) -> Result<(), LedgerError> {
        if slot.offset + slot.text_record_len() > self.end {
            return Ok(());
        }
        let zeros = vec![0; slot.len as usize];
        self.file.write_all_at(&zeros, slot.offset + TEXT_HEADER)?;
        self.dirty = true;
        Ok(())
    }
}

impl Drop for LogFile {
    /// Stops the thread ahead and waits for it: whatever closes the file (a shutdown, a test
    /// that truncates it) finds no zeros written after.
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.ahead.take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}

/// How far the file holds zeros written ahead. Zeros are only ever written at or past its
/// length and frames only below it, and both writers of zeros (the thread ahead, the writer
/// when it has to) hold its lock while they write: neither can overwrite a frame.
#[derive(Debug)]
struct Allocated {
    len: Mutex<u64>,
}

impl Allocated {
    fn lock(&self) -> std::sync::MutexGuard<'_, u64> {
        self.len.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes zeros from the file's length to a whole [`PREALLOCATE`] step at or past `to`
    /// and makes them durable.
    fn extend(&self, file: &File, to: u64) -> Result<(), LedgerError> {
        let mut len = self.lock();
        if *len >= to {
            return Ok(());
        }
        let target = to.div_ceil(PREALLOCATE) * PREALLOCATE;
        let zeros = vec![0u8; usize::try_from(target - *len).unwrap_or(usize::MAX)];
        file.write_all_at(&zeros, *len)?;
        file.sync_data()?;
        *len = target;
        Ok(())
    }
}

/// The bytes of one frame starting at `at`, and where its entries sit.
fn frame(
    at: u64,
    events: &[StagedEvent],
    texts: &[([u8; 32], TextRecord)],
) -> Result<(Vec<u8>, Framed), LedgerError> {
    let too_large =
        |what: &str| LedgerError::NotCanonicalizable(format!("{what} of 4 GiB or more"));
    let mut body = Vec::with_capacity(
        events
            .iter()
            .map(|e| 1 + 8 + 2 + 36 + 4 + e.bytes.len())
            .chain(texts.iter().map(|(_, r)| 1 + 36 + SALT_LEN + r.text.len()))
            .sum(),
    );
    let body_at = at + FRAME_HEADER as u64;
    let mut framed = Framed::default();
    for event in events {
        body.push(EVENT);
        body.extend_from_slice(&event.seq.to_le_bytes());
        let session = event.session.as_ref().map_or("", SessionId::as_str);
        let session_len =
            u16::try_from(session.len()).map_err(|_| too_large("a session id of 64 KiB"))?;
        body.extend_from_slice(&session_len.to_le_bytes());
        body.extend_from_slice(session.as_bytes());
        let len = u32::try_from(event.bytes.len()).map_err(|_| too_large("an event"))?;
        body.extend_from_slice(&len.to_le_bytes());
        let slot = Slot {
            offset: body_at + body.len() as u64,
            len,
        };
        body.extend_from_slice(&event.bytes);
        framed.events.push((event.seq, event.session.clone(), slot));
    }
    for (commitment, record) in texts {
        body.push(TEXT);
        let len = u32::try_from(SALT_LEN + record.text.len()).map_err(|_| too_large("a text"))?;
        let slot = Slot {
            offset: body_at + body.len() as u64,
            len,
        };
        body.extend_from_slice(&len.to_le_bytes());
        body.extend_from_slice(commitment);
        body.extend_from_slice(&record.salt);
        body.extend_from_slice(record.text.as_bytes());
        framed.texts.push((*commitment, slot));
    }
    let len = u32::try_from(body.len()).map_err(|_| too_large("a batch"))?;
    let mut bytes = Vec::with_capacity(FRAME_HEADER + body.len());
    bytes.extend_from_slice(FRAME_MAGIC);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(blake3::hash(&body).as_bytes());
    bytes.extend_from_slice(&body);
    Ok((bytes, framed))
}

/// The body length `header` announces, if it is a frame's header (its magic) and the body fits
/// in the `file_len` bytes of the file from `body_at` (which is within them).
fn announced_len(header: &[u8; FRAME_HEADER], body_at: u64, file_len: u64) -> Option<u32> {
    let len = u32::from_le_bytes(header[4..8].try_into().ok()?);
    (header[..4] == FRAME_MAGIC[..] && file_len - body_at >= u64::from(len)).then_some(len)
}

/// The frame `header` and `body` (read at `body_at`) make, if it is whole: the checksum holds
/// and the entries parse to the body's end. What recovery keeps and what proves bad bytes are
/// damage rather than a torn write are judged here alike.
fn whole(header: &[u8; FRAME_HEADER], body: &[u8], body_at: u64) -> Option<Framed> {
    if blake3::hash(body).as_bytes()[..] != header[8..] {
        return None;
    }
    let mut framed = parse_body(body, body_at)?;
    framed.end = body_at + body.len() as u64;
    Some(framed)
}

/// The entries of a frame body that starts at `body_at`; `None` if it does not parse whole.
fn parse_body(body: &[u8], body_at: u64) -> Option<Framed> {
    let mut framed = Framed::default();
    let mut at = 0usize;
    let take = |at: &mut usize, n: usize| -> Option<&[u8]> {
        let bytes = body.get(*at..at.checked_add(n)?)?;
        *at += n;
        Some(bytes)
    };
    while at < body.len() {
        let tag = take(&mut at, 1)?[0];
        match tag {
            EVENT => {
                let seq = u64::from_le_bytes(take(&mut at, 8)?.try_into().ok()?);
                let session_len = u16::from_le_bytes(take(&mut at, 2)?.try_into().ok()?);
                let session = match session_len {
                    0 => None,
                    n => Some(SessionId::parse(
                        std::str::from_utf8(take(&mut at, n.into())?).ok()?,
                    )?),
                };
                let len = u32::from_le_bytes(take(&mut at, 4)?.try_into().ok()?);
                let offset = body_at + at as u64;
                take(&mut at, len as usize)?;
                framed.events.push((seq, session, Slot { offset, len }));
            }
            TEXT => {
                let offset = body_at + at as u64;
                let len = u32::from_le_bytes(take(&mut at, 4)?.try_into().ok()?);
                let commitment: [u8; 32] = take(&mut at, 32)?.try_into().ok()?;
                if (len as usize) < SALT_LEN {
                    return None;
                }
                take(&mut at, len as usize)?;
                framed.texts.push((commitment, Slot { offset, len }));
            }
            _ => return None,
        }
    }
    Some(framed)
}

/// The log file opened for reading only, by any thread: each read is positioned (`pread`), so
/// readers share no file offset with each other or with the writer. Slots come from the
/// store's index, which only names durable entries.
#[derive(Debug)]
pub struct LogReader {
    file: File,
}

impl LogReader {
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        Ok(Self {
            file: File::open(path)?,
        })
    }

    /// The stored bytes of the event at `slot`.
    pub fn event(&self, slot: Slot) -> Result<Vec<u8>, LedgerError> {
        let mut bytes = vec![0; slot.len as usize];
        self.file.read_exact_at(&mut bytes, slot.offset)?;
        Ok(bytes)
    }

    /// The text record at `slot`, if it is the record of `commitment` and still holds text.
    pub fn text(
        &self,
        slot: Slot,
        commitment: &[u8; 32],
    ) -> Result<Option<TextRecord>, LedgerError> {
        let mut bytes = vec![0; usize::try_from(slot.text_record_len()).unwrap_or(usize::MAX)];
        self.file.read_exact_at(&mut bytes, slot.offset)?;
        decode_text(&bytes, slot, commitment)
    }

    /// Reads the byte ranges `(offset, len)` given, in the order given, through one large
    /// buffer: ascending offsets make this one forward pass over the file instead of a read
    /// per entry (whole-ledger passes: `verify`, a replay).
    pub fn in_order<'a, K>(
        &'a self,
        ranges: impl Iterator<Item = Result<(K, u64, u64), LedgerError>> + 'a,
    ) -> impl Iterator<Item = Result<(K, Vec<u8>), LedgerError>> + 'a {
        let mut reader = BufReader::with_capacity(1 << 20, &self.file);
        // Where `reader` stands in the file; `None` until the first read, or after a failed one.
        let mut at: Option<u64> = None;
        ranges.map(move |range| {
            let (key, offset, len) = range?;
            match at {
                Some(pos) if pos <= offset => {
                    let ahead = i64::try_from(offset - pos)
                        .map_err(|_| LedgerError::Corrupt("log offset".into()))?;
                    reader.seek_relative(ahead)?;
                }
                _ => {
                    reader.seek(SeekFrom::Start(offset))?;
                }
            }
            at = None;
            let mut bytes = vec![0; usize::try_from(len).unwrap_or(usize::MAX)];
            reader.read_exact(&mut bytes)?;
            at = Some(offset + len);
            Ok((key, bytes))
        })
    }

    /// The text records at `slots` (with the commitment each should hold), in the order given,
    /// each as [`LogReader::text`] gives it, through [`LogReader::in_order`].
    pub fn texts_in_order(
        &self,
        slots: Vec<([u8; 32], Slot)>,
    ) -> impl Iterator<Item = ([u8; 32], Result<Option<TextRecord>, LedgerError>)> + '_ {
        let ranges = slots
            .into_iter()
            .map(|(c, slot)| Ok(((c, slot), slot.offset, slot.text_record_len())));
        self.in_order(ranges).map(|read| match read {
            Ok(((c, slot), bytes)) => (c, decode_text(&bytes, slot, &c)),
            // `in_order` hands back the key only with the bytes: name no commitment.
            Err(e) => ([0; 32], Err(e)),
        })
    }
}

/// The text record of `commitment` in `bytes` (read at `slot`), or `None` if they hold another
/// record or an erased one.
pub fn decode_text(
    bytes: &[u8],
    slot: Slot,
    commitment: &[u8; 32],
) -> Result<Option<TextRecord>, LedgerError> {
    if bytes.len() < TEXT_HEADER as usize + SALT_LEN {
        return Ok(None);
    }
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

/// Crash drills for debug builds (the tests' binary; release builds have none), each read once
/// from the environment (tests/it/durability.rs):
/// - `THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES=N`: the process aborts right after the N-th
///   batch's frame is durable and before the index has seen anything of it;
/// - `THINKLEDGER_DRILL_TORN_WRITE=N`: the N-th frame is written only half, then the process
///   aborts.
#[cfg(debug_assertions)]
pub(super) mod crash_drill {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn due(var: &str, at: &OnceLock<Option<u64>>, count: &AtomicU64) -> bool {
        let at = at.get_or_init(|| std::env::var(var).ok().and_then(|v| v.trim().parse().ok()));
        at.is_some_and(|at| count.fetch_add(1, Ordering::Relaxed) + 1 == at)
    }

    pub(crate) fn between_the_two_writes() -> bool {
        static AT: OnceLock<Option<u64>> = OnceLock::new();
        static COUNT: AtomicU64 = AtomicU64::new(0);
        due("THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES", &AT, &COUNT)
    }

    pub(crate) fn torn_write() -> bool {
        static AT: OnceLock<Option<u64>> = OnceLock::new();
        static COUNT: AtomicU64 = AtomicU64::new(0);
        due("THINKLEDGER_DRILL_TORN_WRITE", &AT, &COUNT)
    }

    pub(crate) fn abort(when: &str) -> ! {
        eprintln!("crash drill: aborting {when}");
        std::process::abort();
    }
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

    fn event(seq: u64, session: Option<&SessionId>) -> StagedEvent {
        StagedEvent {
            seq,
            bytes: format!("{{\"seq\":{seq}}}").into_bytes(),
            session: session.cloned(),
        }
    }

    #[test]
    fn frames_round_trip_texts_are_erased_in_place_and_torn_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let session = SessionId::from_random_bytes([3; 16]);
        let mut log = LogFile::open(&path).unwrap();
        assert_eq!(log.recover(LogFile::start(), &mut |_| Ok(())).unwrap(), 0);
        let first = log
            .append(
                &[event(1, Some(&session)), event(2, None)],
                &[([1; 32], record("first secret"))],
            )
            .unwrap();
        let second = log
            .append(&[event(3, None)], &[([2; 32], record("second"))])
            .unwrap();
        log.sync().unwrap();
        let reader = LogReader::open(&path).unwrap();
        assert_eq!(reader.event(first.events[1].2).unwrap(), b"{\"seq\":2}");
        let a = first.texts[0].1;
        let b = second.texts[0].1;
        assert_eq!(
            reader.text(a, &[1; 32]).unwrap(),
            Some(record("first secret"))
        );
        assert_eq!(reader.text(a, &[2; 32]).unwrap(), None, "another's slot");
        // Zeros are written ahead of the frames (by a thread of their own), and kept when the
        // log is read back.
        let ahead = second.end + PREALLOCATE;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::metadata(&path).unwrap().len() < ahead {
            assert!(
                std::time::Instant::now() < deadline,
                "no zeros written ahead"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Read back whole, in order, from the start: the same entries.
        let mut seen = Vec::new();
        assert_eq!(
            log.recover(LogFile::start(), &mut |f| {
                seen.push(f);
                Ok(())
            })
            .unwrap(),
            2
        );
        assert_eq!(seen[0].events, first.events);
        assert_eq!(seen[1].texts, second.texts);
        assert_eq!(seen[1].end, second.end);
        assert!(std::fs::metadata(&path).unwrap().len() >= ahead);

        log.erase(a).unwrap();
        log.sync().unwrap();
        assert_eq!(reader.text(a, &[1; 32]).unwrap(), None);
        assert_eq!(reader.text(b, &[2; 32]).unwrap(), Some(record("second")));
        let got: Vec<_> = reader
            .texts_in_order(vec![([2; 32], b), ([1; 32], a), ([1; 32], b)])
            .map(|(_, r)| r.unwrap())
            .collect();
        assert_eq!(got, vec![Some(record("second")), None, None]);
        assert!(
            !std::fs::read(&path)
                .unwrap()
                .windows(12)
                .any(|w| w == b"first secret")
        );

        // A frame whose bytes changed, followed by a whole one: damage, not a torn write, so
        // refused and nothing cut off.
        let third = log.append(&[event(4, None)], &[]).unwrap();
        let fourth = log.append(&[event(5, None)], &[]).unwrap();
        log.sync().unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(b"X", third.events[0].2.offset).unwrap();
        drop(log);
        let before = std::fs::metadata(&path).unwrap().len();
        let mut log = LogFile::open(&path).unwrap();
        let refused = log.recover(second.end, &mut |_| Ok(())).unwrap_err();
        assert!(
            refused.to_string().contains("not a torn write"),
            "{refused}"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), before);
        drop(log);
        // The last frame damaged (a torn write): cut off from it.
        file.set_len(fourth.end).unwrap();
        file.write_all_at(b"X", fourth.events[0].2.offset).unwrap();
        let mut log = LogFile::open(&path).unwrap();
        assert_eq!(log.recover(third.end, &mut |_| Ok(())).unwrap(), 0);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), third.end);
        drop(log);
        file.set_len(second.end).unwrap();
        let mut log = LogFile::open(&path).unwrap();
        assert_eq!(log.recover(second.end, &mut |_| Ok(())).unwrap(), 0);
        let torn = log.append(&[event(4, None)], &[]).unwrap();
        log.sync().unwrap();
        // Closed first: its thread that writes zeros ahead must not extend the file again.
        drop(log);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(torn.end - 3)
            .unwrap();
        let mut log = LogFile::open(&path).unwrap();
        assert_eq!(log.recover(second.end, &mut |_| Ok(())).unwrap(), 0);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), second.end);
        assert!(
            log.recover(second.end + 1_000, &mut |_| Ok(())).is_err(),
            "an index past the end of the file"
        );
        assert_eq!(Slot::decode(&b.encode()), Some(b));
    }
}
