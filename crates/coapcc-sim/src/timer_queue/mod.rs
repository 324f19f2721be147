//! The timer queue ([`TimerQueue`]): per-client timers: at most one armed timer per slot (client), keyed by `(deadline, seq)`,
//! popped in exact `(deadline, seq)` order, with O(1) arm, re-arm and disarm.
//!
//! # Structure
//!
//! A timing wheel of level-1 slots with lazy deletion, in front of which a sorted vector
//! keeps the timers of the current slot in exact order:
//! - `armed[slot]` is the authoritative state of a slot: the `(time, seq)` it is armed for,
//!   `seq == 0` when disarmed. Arming adds an entry; re-arming or disarming only rewrites
//!   `armed`, leaving the old entry behind as *stale* (its `seq` no longer matches); stale
//!   entries are dropped when they reach the front, or all at once when they outnumber the
//!   armed timers by more than `PURGE_SLACK` (so memory follows the armed timers, not
//!   the arms since the start).
//! - Time is cut into level-1 slots of 2^28 ns (about 268 ms), each made of 256 level-0
//!   slots of 2^20 ns (about 1 ms). `front` (a vector sorted on `(time, seq)`, taken from
//!   its start) holds the entries of the current level-1 slot and anything earlier; `l1`
//!   the entries of the next 255 level-1 slots (about 68 s), one vector each, appended in
//!   arming order; `far` anything later.
//! - When `front` has no armed entry left, the next non-empty level-1 slot (a bitmap finds
//!   it) becomes `front`, sorted once: a small slot (at most `DIRECT`, 48 entries, as with
//!   a few hundred clients) by linking each entry into a list per level-0 slot, marked in a
//!   bitmap, its stale entries dropped (`bucket_sort`); a larger one in two passes, a counting sort by
//!   level-0 slot into `front` (every write lands in one buffer the size of the slot), then
//!   each level-0 slot's few entries sorted in place. When `l1` is empty, `far` is
//!   re-spread. An entry therefore moves once before it fires (more only for deadlines over
//!   a minute ahead), arms are vector appends and a pop moves nothing (a binary heap as
//!   `front` moved log n entries per pop: 8 % of the 400-client reference run's
//!   instructions), so the cost of a timer does not grow with the number of pending timers.
//!   (An earlier design spread each large level-1 slot over 256 level-0 vectors and copied
//!   each level-0 slot to `front` in turn: four copies of every entry, and per millisecond
//!   the fixed cost of a slot, which at 100 000 clients held one or two timers.)
//! - An arm within the current level-1 slot (rare: retransmission timers are seconds away)
//!   is inserted into `front` at its place, or, once `front` holds more than `SPREAD` (64)
//!   entries, pushed on `late`, a binary heap the front is the smaller of (at a large
//!   population's start, every client arms its first timer while the wheel's current slot
//!   is the one its first timer made current: sorted inserts into one vector of them all
//!   were quadratic, about a second per 100 000 clients).
//!
//! Whatever the clock does, `front` and `late` hold every entry not later than the wheel's
//! slots, so timers come out exactly as from one binary heap of all of them.
//!
//! An entry is 16 bytes: its time, and its sequence number and slot packed in one word, the
//! sequence number in the high 40 bits, so the word orders as the sequence number does.
//! Hence at most [`MAX_SLOTS`] (2^24) slots and sequence numbers below [`SEQ_LIMIT`] (2^40);
//! the engine refuses a population that needs more slots and stops a run that nears the
//! limit, each with an error that says so.
//!
//! # Loading ahead and memory
//!
//! For a large population ([`TimerQueue::set_look_ahead`]), [`TimerQueue::step`] walks
//! `front`, sorted, so in the order the timers will fire, a few entries ahead of its head,
//! so the caller can load each client's state before its timer fires. The per-slot timer
//! words (`armed`), like the engine's per-client arrays, ask for transparent huge pages when
//! they reach 4 MiB ([`crate::cache_hints::advise_huge_pages`]): a large population's records are reached at
//! random, and with 4 KiB pages nearly every access also missed the TLB.

use std::collections::BinaryHeap;

use crate::cache_hints::{advise_huge_pages, prefetch, prefetch_line};
use crate::link::Nanos;

/// log2 of a level-0 slot's width, ns.
const S0: u32 = 20;
/// log2 of a level-1 slot's width, ns (256 level-0 slots).
const S1: u32 = S0 + 8;

/// Stale entries allowed beyond the armed timers' count before [`TimerQueue::purge_stale`].
const PURGE_SLACK: usize = 256;

/// A level-1 slot with at most this many entries becomes `front` by
/// [`TimerQueue::bucket_sort`] (more: a counting sort by level-0 slot first).
const DIRECT: usize = 48;

/// `front` entries beyond which an arm into the current level-1 slot goes to the `late` heap
/// ([`TimerQueue::push_front`]).
const SPREAD: usize = 64;

/// How many entries ahead of the timers done [`TimerQueue::step`] hands entries out.
const LEAD: usize = 16;

/// How many entries before handing it out [`TimerQueue::step`] loads an entry's timer word.
const WORD_GAP: usize = 8;

/// Entries whose timer word, and entries handed out, per [`TimerQueue::step`].
const STEP: usize = 2;

/// Bits of a [`TimerEntry`]'s tag that hold the slot: a queue has at most [`MAX_SLOTS`].
const SLOT_BITS: u32 = 24;

/// The most timer slots a queue can have (2^24 = 16 777 216: the engine refuses a run that
/// needs more, [`crate::engine`]).
pub(crate) const MAX_SLOTS: usize = 1 << SLOT_BITS;

/// Sequence numbers a timer can be armed with are below this (2^40, about 10^12: at ten
/// million a second, more than a day of computing; the engine stops a run that gets there
/// with an error).
pub(crate) const SEQ_LIMIT: u64 = 1 << (64 - SLOT_BITS);

/// A timer: the slot (client) armed for `time`, armed when the event counter was `seq`. 16
/// bytes (the timing wheel copies each entry a few times): `seq` and the slot share one
/// word, `seq` in the high bits, so the tag orders as `seq` does (a `seq` is unique).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerEntry {
    pub time: Nanos,
    /// `seq << SLOT_BITS | slot`.
    tag: u64,
}

impl TimerEntry {
    #[inline(always)]
    fn new(time: Nanos, seq: u64, client: u32) -> Self {
        debug_assert!(seq < SEQ_LIMIT && (client as usize) < MAX_SLOTS);
        TimerEntry { time, tag: seq << SLOT_BITS | client as u64 }
    }

    /// The sequence number the timer was armed with.
    #[inline(always)]
    pub fn seq(&self) -> u64 {
        self.tag >> SLOT_BITS
    }

    /// The slot (client).
    #[inline(always)]
    pub fn client(&self) -> u32 {
        (self.tag & (MAX_SLOTS as u64 - 1)) as u32
    }

    /// `(time, seq)` packed into one integer: one branch-free comparison.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.tag as u128
    }
}

const _: () = assert!(std::mem::size_of::<TimerEntry>() == 16);

/// An entry of [`TimerQueue::late`], ordered so that the heap's top is the earliest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Late(TimerEntry);

impl Ord for Late {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.key().cmp(&self.0.key())
    }
}
impl PartialOrd for Late {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// 256 bits: which slots of a level may hold entries.
#[derive(Clone, Copy, Debug, Default)]
struct Bits([u64; 4]);

impl Bits {
    #[inline(always)]
    fn set(&mut self, i: usize) {
        self.0[i >> 6] |= 1 << (i & 63);
    }
    #[inline(always)]
    fn has(&self, i: usize) -> bool {
        self.0[i >> 6] >> (i & 63) & 1 != 0
    }
    #[inline(always)]
    fn clear(&mut self, i: usize) {
        self.0[i >> 6] &= !(1 << (i & 63));
    }
    /// The first set bit at or after `from` (< 256), if any.
    #[inline]
    fn next_from(&self, from: usize) -> Option<usize> {
        let mut w = from >> 6;
        if w >= 4 {
            return None;
        }
        let mut bits = self.0[w] & (!0u64 << (from & 63));
        loop {
            if bits != 0 {
                return Some((w << 6) + bits.trailing_zeros() as usize);
            }
            w += 1;
            if w == 4 {
                return None;
            }
            bits = self.0[w];
        }
    }
}

/// The timers of a run (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) struct TimerQueue {
    /// The entries due up to the end of level-0 slot `c0`, sorted by `(time, seq)`, from
    /// index `head` on (those before it were taken).
    front: Vec<TimerEntry>,
    head: usize,
    /// Entries of the current slot armed while `front` held more than [`SPREAD`] (a large
    /// population arming into a slot taken whole): a heap, so that such arms cost O(log n)
    /// instead of a sorted insert's move of the whole vector. Empty almost always.
    late: BinaryHeap<Late>,
    /// The last level-0 slot number (`time >> S0`) `front` covers: always the last of a
    /// level-1 slot (`c0 & 255 == 255`), the current level-1 slot being `c0 >> 8`.
    c0: u64,
    l1: Vec<Vec<TimerEntry>>,
    l1_bits: Bits,
    far: Vec<TimerEntry>,
    /// Smallest level-1 slot number in `far` (`u64::MAX` if empty).
    far_min: u64,
    /// Per slot: `(time, tag)` it is armed for ([`TimerEntry`]'s tag: its `seq` and the
    /// slot); `tag == 0`: disarmed (a `seq` is never 0).
    armed: Vec<(Nanos, u64)>,
    live: usize,
    /// Entries held in `front`, `late`, `l1` and `far`, stale ones included.
    stored: usize,
    /// The front as last found by [`TimerQueue::peek`], kept up to date by `set` and
    /// `remove` (the engine peeks once per event).
    cached: Option<TimerEntry>,
    /// Emptied slot vectors, for the next slot that needs one: memory follows the entries
    /// stored, not the largest burst each of the 256 slots ever held.
    spare: Vec<Vec<TimerEntry>>,
    /// Total capacity of `spare`, entries.
    spare_cap: usize,
    /// Loading ahead: entries of `front` before this index had their timer word loaded.
    words: usize,
    /// Entries of `front` before this index were handed out (`<= words`).
    handed: usize,
    /// The `c0` for which [`Self::extend_front`] last found nothing to append (it is not
    /// tried again until the wheel moves).
    extend_tried: u64,
    /// Whether to load timer state ahead at all ([`Self::set_look_ahead`]).
    look: bool,
}

impl TimerQueue {
    pub fn new(slots: usize) -> Self {
        TimerQueue {
            front: Vec::new(),
            head: 0,
            late: BinaryHeap::new(),
            // `front` covers the first level-1 slot (empty).
            c0: 255,
            l1: vec![Vec::new(); 256],
            l1_bits: Bits::default(),
            far: Vec::new(),
            far_min: u64::MAX,
            armed: {
                let mut a = Vec::with_capacity(slots);
                advise_huge_pages(&a);
                a.resize(slots, (0, 0));
                a
            },
            live: 0,
            stored: 0,
            cached: None,
            spare: Vec::new(),
            spare_cap: 0,
            words: 0,
            handed: 0,
            extend_tried: u64::MAX,
            look: false,
        }
    }

    /// Load the timer state of coming entries ahead and note the armed ones for
    /// [`Self::step`] (worth it for populations whose state outgrows the caches).
    pub fn set_look_ahead(&mut self, on: bool) {
        self.look = on;
    }

    /// Load `client`'s timer state into the cache ahead of its use (a hint).
    #[inline(always)]
    pub fn prefetch(&self, client: u32) {
        if let Some(a) = self.armed.get(client as usize) {
            prefetch(a);
        }
    }

    /// One step of loading ahead (call it once per event; nothing unless
    /// [`Self::set_look_ahead`]). The entries of `front` (sorted: in the order the timers
    /// fire) are gone through [`LEAD`] entries ahead of its head: the timer word of an entry
    /// is loaded first, and [`WORD_GAP`] entries later, if it is still armed, its slot
    /// (client) is handed to `f` so the caller can load its state; at most [`STEP`] entries of
    /// each per call. Streaming a few entries per event, rather than whole slots when the
    /// wheel advances, keeps the loads just ahead of the timers however many share a slot,
    /// without more loads in flight than the CPU tracks. (The entries in `late`, rare, are
    /// not loaded ahead.)
    #[inline(always)]
    pub fn step(&mut self, f: impl FnMut(u32)) {
        if self.look {
            self.step_ahead(f);
        }
    }

    /// [`Self::step`] when loading ahead: out of line, so that the event loop of a small
    /// population, which never loads ahead, carries none of it.
    #[inline(never)]
    fn step_ahead(&mut self, mut f: impl FnMut(u32)) {
        if self.head + LEAD + WORD_GAP > self.front.len() && self.extend_tried != self.c0 {
            self.extend_front();
        }
        let len = self.front.len();
        let hand_to = (self.head + LEAD).min(len);
        self.handed = self.handed.max(self.head);
        self.words = self.words.max(self.handed);
        let ready = if self.words == len { len } else { self.words.saturating_sub(WORD_GAP) };
        let mut n = 0;
        while self.handed < ready.min(hand_to) && n < STEP {
            let e = self.front[self.handed];
            self.handed += 1;
            n += 1;
            if self.armed.get(e.client() as usize) == Some(&(e.time, e.tag)) {
                f(e.client());
            }
        }
        let word_to = (hand_to + WORD_GAP).min(len);
        let mut n = 0;
        while self.words < word_to && n < STEP {
            if let Some(a) = self.armed.get(self.front[self.words].client() as usize) {
                prefetch(a);
            }
            self.words += 1;
            n += 1;
        }
    }

    /// An emptied slot vector: kept as a spare (if small: at most 64 entries, or when loading
    /// ahead at most a 64th of the entries stored, four times a level-1 slot's share) while
    /// the spares hold no more room than half the entries stored plus 256 (1 024 entries
    /// when not loading ahead), else freed; the slot is left with none.
    #[inline]
    fn recycle(&mut self, v: Vec<TimerEntry>) {
        debug_assert!(v.is_empty());
        // Small populations: only small vectors (a spare goes to whichever slot needs one
        // next, often a level-1 slot holding a few entries for a long time). Large ones: a
        // level-1 slot holds hundreds of entries, and a vector grown to that size and freed
        // each time cost about 3 % of the instructions in reallocations alone at 100 000
        // clients. But a vector grown by a burst (every client's first timer within a few
        // level-1 slots) is freed: passed on from slot to slot, such vectors held five times
        // the entries stored (8 MB at 100 000 clients).
        let (cap, room) = if self.look { ((self.stored >> 6).max(64), self.stored / 2 + 256) } else { (64, 1024) };
        if v.capacity() <= cap && self.spare_cap + v.capacity() <= room {
            self.spare_cap += v.capacity();
            self.spare.push(v);
        }
    }

    /// Append `e` to slot vector `v`, giving it a spare vector if it has none.
    #[inline(always)]
    fn push_to(v: &mut Vec<TimerEntry>, spare: &mut Vec<Vec<TimerEntry>>, spare_cap: &mut usize, e: TimerEntry) {
        if v.capacity() == 0 {
            if let Some(s) = spare.pop() {
                *spare_cap -= s.capacity();
                *v = s;
            }
        }
        v.push(e);
    }

    /// Start loading the cache line the next entry appended to `v` ends in (a hint): with a
    /// large population, arms go to some hundred slot vectors at random, and an append that
    /// starts a line no longer waits for it (stores missing the cache filled the store
    /// buffer: 7 % of a 100 000-client run stalled on such an append).
    #[inline(always)]
    fn prefetch_tail(v: &[TimerEntry]) {
        let end = std::mem::size_of_val(v) + std::mem::size_of::<TimerEntry>() - 1;
        prefetch_line((v.as_ptr() as *const u8).wrapping_add(end));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live
    }

    /// When `client`'s timer is armed for, if it is.
    #[inline]
    pub fn time_of(&self, client: u32) -> Option<Nanos> {
        let (t, s) = self.armed[client as usize];
        (s != 0).then_some(t)
    }

    /// Arm (or re-arm) `client`'s timer for `time`; `seq` (non-zero, unique) breaks ties.
    #[inline(always)]
    pub fn set(&mut self, client: u32, time: Nanos, seq: u64) {
        debug_assert!(seq != 0);
        let e = TimerEntry::new(time, seq, client);
        let a = &mut self.armed[client as usize];
        self.live += usize::from(a.1 == 0);
        *a = (time, e.tag);
        if let Some(f) = self.cached {
            if f.client() == client {
                self.cached = None;
            } else if e.key() < f.key() {
                self.cached = Some(e);
            }
        }
        if self.stored >= 2 * self.live + PURGE_SLACK {
            self.purge_stale();
        }
        self.stored += 1;
        self.insert(e);
    }

    /// Drop every stale entry: with lazy deletion, re-armed and disarmed timers would
    /// otherwise stay until their old deadline (a retransmission timer after backoff is a
    /// minute away), holding many times more entries than there are armed timers. Runs
    /// after `live + PURGE_SLACK` arms since the last one: amortised O(1) per arm.
    #[cold]
    #[inline(never)]
    fn purge_stale(&mut self) {
        let armed = &self.armed;
        let keep = |e: &TimerEntry| armed[e.client() as usize] == (e.time, e.tag);
        self.front.drain(..self.head);
        self.head = 0;
        self.front.retain(keep);
        self.late.retain(|l| keep(&l.0));
        // Indices into `front` moved: loading ahead starts again from its head.
        self.words = 0;
        self.handed = 0;
        let mut stored = self.front.len() + self.late.len();
        for v in self.l1.iter_mut() {
            v.retain(keep);
            stored += v.len();
        }
        self.far.retain(keep);
        self.stored = stored + self.far.len();
    }

    /// Disarm `client`'s timer, if armed.
    #[inline]
    pub fn remove(&mut self, client: u32) {
        let a = &mut self.armed[client as usize];
        self.live -= usize::from(a.1 != 0);
        a.1 = 0;
        if self.cached.is_some_and(|f| f.client() == client) {
            self.cached = None;
        }
    }

    #[inline(always)]
    fn insert(&mut self, e: TimerEntry) {
        if e.time >> S0 <= self.c0 {
            self.push_front(e);
            return;
        }
        // A later level-1 slot (`c0` is the last level-0 slot of the current one).
        let s1 = e.time >> S1;
        if s1 - (self.c0 >> 8) < 256 {
            let i = (s1 & 255) as usize;
            Self::push_to(&mut self.l1[i], &mut self.spare, &mut self.spare_cap, e);
            self.l1_bits.set(i);
            if self.look {
                Self::prefetch_tail(&self.l1[i]);
            }
        } else {
            self.far.push(e);
            self.far_min = self.far_min.min(s1);
        }
    }

    /// The earliest armed timer (stale entries in front of it are dropped).
    #[inline]
    pub fn peek(&mut self) -> Option<TimerEntry> {
        if self.cached.is_some() {
            return self.cached;
        }
        if self.stored == 0 {
            // Nothing stored: no need to walk the wheel's empty slots (a run whose clients
            // are idle between messages asks on every event).
            return None;
        }
        self.cached = self.find_front();
        self.cached
    }

    /// Inlined: returned through memory, the entry made the caller's next loads wait for
    /// every store before it (a failed store-to-load forward behind a store missing the
    /// cache; 8 % of a 100 000-client run).
    #[inline(always)]
    fn find_front(&mut self) -> Option<TimerEntry> {
        loop {
            let mut first = None;
            while let Some(&e) = self.front.get(self.head) {
                if self.armed.get(e.client() as usize).is_some_and(|a| a.1 == e.tag) {
                    first = Some(e);
                    break;
                }
                self.head += 1;
                self.stored -= 1;
            }
            if !self.late.is_empty() {
                while let Some(&Late(e)) = self.late.peek() {
                    if self.armed.get(e.client() as usize).is_some_and(|a| a.1 == e.tag) {
                        if first.map_or(true, |f| e.key() < f.key()) {
                            first = Some(e);
                        }
                        break;
                    }
                    self.late.pop();
                    self.stored -= 1;
                }
            }
            if first.is_some() {
                return first;
            }
            if !self.advance() {
                return None;
            }
        }
    }

    /// `front` and `late` hold no armed entry: the next non-empty level-1 slot becomes
    /// `front`, sorted (re-spreading `far` first when needed). False if no entry is left
    /// anywhere.
    #[cold]
    #[inline(never)]
    fn advance(&mut self) -> bool {
        loop {
            let c1 = self.c0 >> 8;
            if self.far_min - c1 < 256 {
                // The wheel has moved on: some far entries now fit in level 1.
                self.respread_far();
                continue;
            }
            let from = ((c1 + 1) & 255) as usize;
            let next = self.l1_bits.next_from(from).or_else(|| self.l1_bits.next_from(0));
            if let Some(i) = next {
                self.l1_bits.clear(i);
                // The level-1 slot number: the first after c1 with this index.
                let s1 = c1 + 1 + ((i as u64).wrapping_sub(c1 + 1) & 255);
                self.c0 = (s1 << 8) | 255;
                let v = std::mem::take(&mut self.l1[i]);
                self.load_front(v);
                return true;
            }
            self.front.clear();
            self.head = 0;
            self.words = 0;
            self.handed = 0;
            if self.far.is_empty() {
                return false;
            }
            // Make the earliest far slot the next level-1 slot.
            self.c0 = ((self.far_min - 1) << 8) | 255;
            self.respread_far();
        }
    }

    /// Sort entries by `(time, seq)` (the keys are unique: the order is total). Slot vectors
    /// are filled in arming order, mostly that of the deadlines: little to move.
    #[inline]
    fn sort(v: &mut [TimerEntry]) {
        v.sort_unstable_by_key(TimerEntry::key);
    }

    /// `front` is spent: the entries of level-1 slot vector `v` replace it, sorted
    /// ([`Self::append_sorted`]), and `v` is recycled (`front` keeps its buffer: fewer vectors
    /// grow and are freed, a lower peak of memory).
    fn load_front(&mut self, mut v: Vec<TimerEntry>) {
        self.front.clear();
        self.head = 0;
        self.words = 0;
        self.handed = 0;
        self.stored -= Self::append_sorted(&mut self.front, &v, &self.armed);
        v.clear();
        self.recycle(v);
    }

    /// Loading ahead is near the end of `front`: if the next level-1 slot holds entries, it
    /// is appended to `front`, sorted, and becomes part of the current slot (`c0` moves to
    /// its end), so the loading ahead goes on across the slots' boundary (else the first
    /// timers of every level-1 slot fired unloaded). Only the adjacent slot, and only while
    /// no `far` entry would come into the wheel's reach: otherwise [`Self::advance`] moves
    /// the wheel when `front` is spent.
    #[cold]
    #[inline(never)]
    fn extend_front(&mut self) {
        let c1 = self.c0 >> 8;
        let i = ((c1 + 1) & 255) as usize;
        if self.far_min - c1 <= 256 || !self.l1_bits.has(i) {
            self.extend_tried = self.c0;
            return;
        }
        self.l1_bits.clear(i);
        self.c0 = ((c1 + 1) << 8) | 255;
        let mut v = std::mem::take(&mut self.l1[i]);
        // The entries taken go (at most those of the last few events, plus the rest).
        self.front.drain(..self.head);
        self.words -= self.head.min(self.words);
        self.handed -= self.head.min(self.handed);
        self.head = 0;
        self.stored -= Self::append_sorted(&mut self.front, &v, &self.armed);
        v.clear();
        self.recycle(v);
    }

    /// Append the entries of one level-1 slot (later than every entry of `front`) to `front`,
    /// sorted. A slot of more than [`DIRECT`] entries is sorted in two passes: placed by
    /// level-0 slot (a counting sort: every write lands in one buffer the size of the slot),
    /// then each level-0 slot's few entries sorted in place. Each entry is copied once, from
    /// the slot it was armed into to `front`, where it stays until it fires. A slot of at
    /// most [`DIRECT`] entries is sorted by [`Self::bucket_sort`], which drops its stale
    /// entries. Returns how many entries were dropped.
    fn append_sorted(front: &mut Vec<TimerEntry>, v: &[TimerEntry], armed: &[(Nanos, u64)]) -> usize {
        let base = front.len();
        if v.len() <= DIRECT {
            return Self::bucket_sort(front, v, armed);
        } else {
            let sub = |e: &TimerEntry| ((e.time >> S0) & 255) as usize;
            let mut count = [0u32; 256];
            for e in v {
                count[sub(e)] += 1;
            }
            let mut at = [0u32; 256];
            let mut sum = 0;
            for (a, &c) in at.iter_mut().zip(&count) {
                *a = sum;
                sum += c;
            }
            front.resize(base + v.len(), TimerEntry { time: 0, tag: 0 });
            let out = &mut front[base..];
            let mut next = at;
            for e in v {
                let k = &mut next[sub(e)];
                out[*k as usize] = *e;
                *k += 1;
            }
            for (&a, &c) in at.iter().zip(&count) {
                if c > 1 {
                    Self::sort(&mut out[a as usize..(a + c) as usize]);
                }
            }
        }
        debug_assert!(front.windows(2).all(|w| w[0].key() < w[1].key()));
        0
    }

    /// Append the live entries of `v` (at most [`DIRECT`], of one level-1 slot) to `front`,
    /// sorted by `(time, seq)`, and return how many stale ones (per `armed`) were dropped
    /// (they would be dropped at the front anyway). Each entry is linked into the list of
    /// its level-0 slot (the stale ones into a list of their own), the slots that hold
    /// entries marked in a bitmap; the lists are then appended in the bitmap's order, the rare
    /// list of more than one entry sorted. The branches follow the slots, not the entries'
    /// order: a slot's handful of timers, in no order, made an insertion sort mispredict a
    /// branch for nearly every entry.
    fn bucket_sort(front: &mut Vec<TimerEntry>, v: &[TimerEntry], armed: &[(Nanos, u64)]) -> usize {
        const NIL: u8 = u8::MAX;
        const STALE: usize = 256;
        debug_assert!(v.len() <= DIRECT);
        let mut first = [NIL; STALE + 1];
        let mut next = [NIL; DIRECT];
        let mut bits = [0u64; 5];
        // From the last entry, so that each list is in the order of `v`.
        for (i, e) in v.iter().enumerate().rev() {
            let live = armed.get(e.client() as usize).is_some_and(|a| a.1 == e.tag);
            let s = if live { ((e.time >> S0) & 255) as usize } else { STALE };
            next[i] = first[s];
            first[s] = i as u8;
            bits[s >> 6] |= 1 << (s & 63);
        }
        let before = front.len();
        front.reserve(v.len());
        for (w, &word) in bits[..4].iter().enumerate() {
            let mut b = word;
            while b != 0 {
                let s = (w << 6) | b.trailing_zeros() as usize;
                b &= b - 1;
                let start = front.len();
                let mut i = first[s];
                while i != NIL {
                    front.push(v[i as usize]);
                    i = next[i as usize];
                }
                if front.len() - start > 1 {
                    Self::sort(&mut front[start..]);
                }
            }
        }
        v.len() - (front.len() - before)
    }

    /// Insert `e` into `front` at its place (rare: a deadline within the current level-1
    /// slot), or, once `front` holds more than [`SPREAD`] entries, into `late`.
    #[cold]
    #[inline(never)]
    fn push_front(&mut self, e: TimerEntry) {
        if self.front.len() - self.head > SPREAD {
            self.late.push(Late(e));
            return;
        }
        let k = e.key();
        let i = self.head + self.front[self.head..].partition_point(|f| f.key() < k);
        self.front.insert(i, e);
    }

    /// Re-insert the `far` entries (those that fit go to the wheel).
    fn respread_far(&mut self) {
        self.far_min = u64::MAX;
        for e in std::mem::take(&mut self.far) {
            self.insert(e);
        }
    }
}

#[cfg(test)]
mod tests;
