//! Which online device gets which record, and what happens when a device cannot keep up. Pure
//! bookkeeping over [`DeviceChannel`]s, so its rules are tested without sockets; the gateway plugs
//! in bounded tokio channels whose other ends write WebSocket frames.
//!
//! The rules, per device:
//! - never the device that caused the event (it has the change in its RPC answer), unless the
//!   frame says `to_origin` (an update without pts: the answer did not carry the pts);
//! - one push per auth key among MTProto connections ([`Hub::register_connection`]): a client may
//!   open several connections on one key (Telegram Desktop does, for config and media, and tries
//!   transports in parallel with one session), and each would otherwise get the same `updates`;
//!   only the connection the client last made a call on ([`Hub::make_current`]; a connection that
//!   said `invokeWithoutUpdates` is not registered at all) gets it;
//! - pts only grows: a record at or below the last pts seen is a duplicate (relays redeliver
//!   after a crash; consumers drop by `(user_id, pts)`) and is skipped, so a device never gets
//!   the same update twice;
//! - a full buffer is never a silent drop: the device gets `updatesTooLong` (its buffer always
//!   keeps one slot for it) and nothing more until it reconnects and calls `updates.getDifference`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use domain::{AuthKeyId, UserId};

use super::encodings::Encodings;

/// Slots of a device's buffer kept free for `updatesTooLong`.
pub const RESERVED_SLOTS: usize = 1;

/// What the gateway queues for one device.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    Frame(Frame),
    /// The device fell behind; it is the last item the device gets on this connection.
    TooLong,
}

/// One TL `Updates` object, serialized once and shared by every device of the account (clones
/// share the JSON and the encodings).
#[derive(Debug, Clone)]
pub struct Frame {
    pub pts: i32,
    pub json: Arc<str>,
    /// When the event committed (unix microseconds), to measure commit-to-push latency.
    pub committed_at_micros: i64,
    /// The device that caused the event gets it too: its TL update has no pts, so the caller's
    /// RPC answer did not move its pts either (the frame carries the pts, see `push_updates`).
    pub to_origin: bool,
    /// The frame in other wire formats (MTProto's TL per layer), each made once.
    pub encodings: Arc<Encodings>,
}

impl Frame {
    pub fn new(pts: i32, json: Arc<str>, committed_at_micros: i64, to_origin: bool) -> Self {
        Self {
            pts,
            json,
            committed_at_micros,
            to_origin,
            encodings: Arc::default(),
        }
    }
}

/// The same frame is the same content; the encodings are a cache of it.
impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        (
            self.pts,
            &self.json,
            self.committed_at_micros,
            self.to_origin,
        ) == (
            other.pts,
            &other.json,
            other.committed_at_micros,
            other.to_origin,
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    Full,
    /// The device's connection is gone.
    Closed,
}

/// The sending end of one device's bounded buffer.
pub trait DeviceChannel: Send + Sync {
    /// Slots free right now. Only the hub adds to the buffer, so this can only grow until the
    /// hub's next push.
    fn free_slots(&self) -> usize;
    fn try_push(&self, item: Outgoing) -> Result<(), PushError>;
}

/// A registration, to unregister exactly this connection (a device may reconnect before its old
/// connection is noticed gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId(u64);

/// The record being delivered, as far as the rules need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub user_id: UserId,
    pub pts: i32,
    pub origin: AuthKeyId,
}

/// What one delivery did, for metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryReport {
    pub pushed: usize,
    pub duplicates: usize,
    pub origin_skipped: usize,
    /// Devices that got `updatesTooLong` now.
    pub too_long: usize,
    /// Devices already past `updatesTooLong`, waiting for their reconnect.
    pub suppressed: usize,
    /// Devices found disconnected (and forgotten).
    pub closed: usize,
    /// MTProto connections skipped because another connection of their auth key got the push.
    pub standby: usize,
}

struct Device<C> {
    id: DeviceId,
    auth_key_id: AuthKeyId,
    /// An MTProto connection: shares its auth key's pushes with the key's other connections.
    shared: bool,
    /// A connection that said `invokeWithoutUpdates`: never pushed to, registered only so that
    /// [`Hub::end_device`] closes it too.
    silent: bool,
    /// When the client last made a call on it (a hub-wide counter): the newest shared connection
    /// of a key gets the key's pushes.
    stamp: u64,
    last_pts: i32,
    overflowed: bool,
    channel: C,
}

/// The online devices of this instance, by account.
pub struct Hub<C> {
    devices: Mutex<HashMap<UserId, Vec<Device<C>>>>,
    next_id: AtomicU64,
    online: AtomicUsize,
}

impl<C: DeviceChannel> Default for Hub<C> {
    fn default() -> Self {
        Self {
            devices: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            online: AtomicUsize::new(0),
        }
    }
}

impl<C: DeviceChannel> Hub<C> {
    pub fn new() -> Self {
        Self::default()
    }

    // A panic while holding the lock cannot leave the map half-updated in a way that matters
    // (every update is one push or one remove), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<UserId, Vec<Device<C>>>> {
        self.devices.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A device came online. It gets records delivered from now on.
    pub fn register(&self, user_id: UserId, auth_key_id: AuthKeyId, channel: C) -> DeviceId {
        self.add(user_id, auth_key_id, false, false, channel)
    }

    /// An MTProto connection that gets no pushes (`invokeWithoutUpdates`): nothing is delivered
    /// to it, but ending its device drops its sender like any other's.
    pub fn register_silent(&self, user_id: UserId, auth_key_id: AuthKeyId, channel: C) -> DeviceId {
        self.add(user_id, auth_key_id, false, true, channel)
    }

    /// An MTProto connection signed in: it gets records delivered from now on, unless another
    /// connection of the same auth key had a call more recently ([`Hub::make_current`]). A new
    /// connection is the current one until then.
    pub fn register_connection(
        &self,
        user_id: UserId,
        auth_key_id: AuthKeyId,
        channel: C,
    ) -> DeviceId {
        self.add(user_id, auth_key_id, true, false, channel)
    }

    /// The client made a call on this connection: its auth key's pushes go here from now on.
    pub fn make_current(&self, user_id: UserId, id: DeviceId) {
        let stamp = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = self
            .lock()
            .get_mut(&user_id)
            .and_then(|list| list.iter_mut().find(|d| d.id == id))
        {
            d.stamp = stamp;
        }
    }

    fn add(
        &self,
        user_id: UserId,
        auth_key_id: AuthKeyId,
        shared: bool,
        silent: bool,
        channel: C,
    ) -> DeviceId {
        // Ids and stamps share one counter: a new registration is newer than every earlier call.
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = DeviceId(n);
        self.lock().entry(user_id).or_default().push(Device {
            id,
            auth_key_id,
            shared,
            silent,
            stamp: n,
            last_pts: 0,
            overflowed: false,
            channel,
        });
        self.online.fetch_add(1, Ordering::Relaxed);
        id
    }

    pub fn unregister(&self, user_id: UserId, id: DeviceId) {
        let mut map = self.lock();
        if let Some(list) = map.get_mut(&user_id) {
            let before = list.len();
            list.retain(|d| d.id != id);
            self.online
                .fetch_sub(before - list.len(), Ordering::Relaxed);
            if list.is_empty() {
                map.remove(&user_id);
            }
        }
    }

    /// The device (authorization) `auth_key_id` was logged out: forgets every connection of it
    /// here, dropping their senders, which makes each connection close (its receiver ends).
    /// Answers how many there were.
    pub fn end_device(&self, user_id: UserId, auth_key_id: AuthKeyId) -> usize {
        let mut map = self.lock();
        let Some(list) = map.get_mut(&user_id) else {
            return 0;
        };
        let before = list.len();
        list.retain(|d| d.auth_key_id != auth_key_id);
        let ended = before - list.len();
        self.online.fetch_sub(ended, Ordering::Relaxed);
        if list.is_empty() {
            map.remove(&user_id);
        }
        ended
    }

    /// Offers a frame outside the account's pts sequence (an update without pts that no event
    /// carries, e.g. `updateNewAuthorization`) to the account's devices but `except`: the current
    /// connection of each auth key, never a silent one, never one past `updatesTooLong`, and only
    /// while its buffer has room (such an update is informative: a full buffer drops it, no
    /// `updatesTooLong`). Answers how many got it.
    pub fn deliver_unsequenced(&self, user_id: UserId, except: AuthKeyId, frame: &Frame) -> usize {
        let map = self.lock();
        let Some(list) = map.get(&user_id) else {
            return 0;
        };
        let newest = |key: AuthKeyId| {
            list.iter()
                .filter(|d| d.shared && d.auth_key_id == key)
                .map(|d| d.stamp)
                .max()
        };
        let mut pushed = 0;
        for d in list {
            if d.silent || d.overflowed || d.auth_key_id == except {
                continue;
            }
            if d.shared && newest(d.auth_key_id) != Some(d.stamp) {
                continue;
            }
            if d.channel.free_slots() > RESERVED_SLOTS
                && d.channel.try_push(Outgoing::Frame(frame.clone())).is_ok()
            {
                pushed += 1;
            }
        }
        pushed
    }

    /// Whether any device of the account is online here (records of other accounts are not
    /// worth rendering).
    pub fn has_devices(&self, user_id: UserId) -> bool {
        self.lock().contains_key(&user_id)
    }

    pub fn devices_online(&self) -> usize {
        self.online.load(Ordering::Relaxed)
    }

    /// Offers one record to every online device of its account.
    pub fn deliver(&self, delivery: &Delivery, frame: &Frame) -> DeliveryReport {
        let mut report = DeliveryReport::default();
        let mut map = self.lock();
        let Some(list) = map.get_mut(&delivery.user_id) else {
            return report;
        };
        // The current connection of each auth key with shared connections (a device has one or
        // two keys' worth of connections: a scan is cheaper than a map).
        let mut current: Vec<(AuthKeyId, u64)> = Vec::new();
        for d in list.iter().filter(|d| d.shared) {
            match current.iter_mut().find(|(k, _)| *k == d.auth_key_id) {
                Some((_, stamp)) => *stamp = (*stamp).max(d.stamp),
                None => current.push((d.auth_key_id, d.stamp)),
            }
        }
        list.retain_mut(|device| {
            if device.silent {
                return true;
            }
            if delivery.pts <= device.last_pts {
                report.duplicates += 1;
                return true;
            }
            // From here on this pts counts as seen by the device, pushed or not: the origin has it
            // from its RPC answer, an overflowed device will fetch it with getDifference.
            device.last_pts = delivery.pts;
            if device.auth_key_id == delivery.origin && !frame.to_origin {
                report.origin_skipped += 1;
                return true;
            }
            if device.shared
                && !current
                    .iter()
                    .any(|&(k, stamp)| k == device.auth_key_id && stamp == device.stamp)
            {
                report.standby += 1;
                return true;
            }
            if device.overflowed {
                report.suppressed += 1;
                return true;
            }
            let pushed = if device.channel.free_slots() > RESERVED_SLOTS {
                device.channel.try_push(Outgoing::Frame(frame.clone()))
            } else {
                Err(PushError::Full)
            };
            match pushed {
                Ok(()) => {
                    report.pushed += 1;
                    true
                }
                Err(PushError::Full) => {
                    device.overflowed = true;
                    report.too_long += 1;
                    // The reserved slot is free: only frames fill the others, and none is pushed
                    // after this. Closed here means the connection is already going away.
                    match device.channel.try_push(Outgoing::TooLong) {
                        Err(PushError::Closed) => {
                            report.closed += 1;
                            false
                        }
                        _ => true,
                    }
                }
                Err(PushError::Closed) => {
                    report.closed += 1;
                    false
                }
            }
        });
        let removed = report.closed;
        if list.is_empty() {
            map.remove(&delivery.user_id);
        }
        drop(map);
        if removed > 0 {
            self.online.fetch_sub(removed, Ordering::Relaxed);
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A bounded queue standing in for a tokio channel.
    #[derive(Clone)]
    struct Queue(Arc<Mutex<(VecDeque<Outgoing>, usize, bool)>>);

    impl Queue {
        fn new(capacity: usize) -> Self {
            Queue(Arc::new(Mutex::new((VecDeque::new(), capacity, false))))
        }
        fn take(&self) -> Vec<Outgoing> {
            self.0.lock().unwrap().0.drain(..).collect()
        }
        fn close(&self) {
            self.0.lock().unwrap().2 = true;
        }
        fn pts(&self) -> Vec<i32> {
            self.take()
                .into_iter()
                .map(|o| match o {
                    Outgoing::Frame(f) => f.pts,
                    Outgoing::TooLong => -1,
                })
                .collect()
        }
    }

    impl DeviceChannel for Queue {
        fn free_slots(&self) -> usize {
            let q = self.0.lock().unwrap();
            q.1 - q.0.len()
        }
        fn try_push(&self, item: Outgoing) -> Result<(), PushError> {
            let mut q = self.0.lock().unwrap();
            if q.2 {
                return Err(PushError::Closed);
            }
            if q.0.len() >= q.1 {
                return Err(PushError::Full);
            }
            q.0.push_back(item);
            Ok(())
        }
    }

    fn user(id: i64) -> UserId {
        UserId::new(id).unwrap()
    }

    fn frame(pts: i32) -> Frame {
        Frame::new(pts, Arc::from(format!("{{\"pts\":{pts}}}")), 0, false)
    }

    fn deliver(hub: &Hub<Queue>, user_id: i64, pts: i32, origin: i64) -> DeliveryReport {
        hub.deliver(
            &Delivery {
                user_id: user(user_id),
                pts,
                origin: AuthKeyId(origin),
            },
            &frame(pts),
        )
    }

    #[test]
    fn every_device_of_the_account_but_the_origin_gets_the_record() {
        let hub = Hub::new();
        let (a1, a2, b1) = (Queue::new(8), Queue::new(8), Queue::new(8));
        hub.register(user(1), AuthKeyId(11), a1.clone());
        hub.register(user(1), AuthKeyId(12), a2.clone());
        hub.register(user(2), AuthKeyId(21), b1.clone());
        let r = deliver(&hub, 1, 1, 11);
        assert_eq!((r.pushed, r.origin_skipped), (1, 1));
        assert_eq!(a1.pts(), Vec::<i32>::new());
        assert_eq!(a2.pts(), vec![1]);
        assert_eq!(b1.pts(), Vec::<i32>::new());
        // Another account's device caused it: all of the owner's devices get it.
        deliver(&hub, 1, 2, 21);
        assert_eq!((a1.pts(), a2.pts()), (vec![2], vec![2]));
        assert_eq!(hub.devices_online(), 3);
    }

    #[test]
    fn an_ended_device_loses_every_connection_and_only_it() {
        let hub = Hub::new();
        let (ws, c1, c2, other) = (Queue::new(8), Queue::new(8), Queue::new(8), Queue::new(8));
        hub.register(user(1), AuthKeyId(11), ws.clone());
        hub.register_connection(user(1), AuthKeyId(11), c1.clone());
        hub.register_connection(user(1), AuthKeyId(11), c2.clone());
        hub.register(user(1), AuthKeyId(12), other.clone());
        let silent = Queue::new(8);
        hub.register_silent(user(1), AuthKeyId(11), silent.clone());
        deliver(&hub, 1, 1, 0);
        assert_eq!(
            silent.pts(),
            Vec::<i32>::new(),
            "a silent connection gets no pushes"
        );
        let (_, _) = (ws.take(), c1.take());
        other.take();
        assert_eq!(hub.end_device(user(1), AuthKeyId(11)), 4);
        assert_eq!(hub.end_device(user(2), AuthKeyId(11)), 0);
        assert_eq!(hub.devices_online(), 1);
        deliver(&hub, 1, 2, 0);
        assert_eq!((ws.pts(), c1.pts(), other.pts()), (vec![], vec![], vec![2]));
        hub.end_device(user(1), AuthKeyId(12));
        assert!(!hub.has_devices(user(1)));
    }

    #[test]
    fn unsequenced_frames_skip_the_new_device_silent_and_standby_connections() {
        let hub = Hub::new();
        let (new, old, standby, current, silent) = (
            Queue::new(8),
            Queue::new(8),
            Queue::new(8),
            Queue::new(8),
            Queue::new(8),
        );
        hub.register(user(1), AuthKeyId(11), new.clone());
        hub.register(user(1), AuthKeyId(12), old.clone());
        hub.register_connection(user(1), AuthKeyId(13), standby.clone());
        hub.register_connection(user(1), AuthKeyId(13), current.clone());
        hub.register_silent(user(1), AuthKeyId(13), silent.clone());
        assert_eq!(
            hub.deliver_unsequenced(user(1), AuthKeyId(11), &frame(0)),
            2
        );
        assert_eq!(
            (
                new.pts(),
                old.pts(),
                standby.pts(),
                current.pts(),
                silent.pts()
            ),
            (vec![], vec![0], vec![], vec![0], vec![])
        );
        // Full buffers (one slot is kept for updatesTooLong) drop it.
        let full = Queue::new(1);
        hub.register(user(2), AuthKeyId(21), full.clone());
        assert_eq!(hub.deliver_unsequenced(user(2), AuthKeyId(0), &frame(0)), 0);
    }

    #[test]
    fn duplicates_and_stale_records_are_dropped_so_order_holds() {
        let hub = Hub::new();
        let q = Queue::new(16);
        hub.register(user(1), AuthKeyId(11), q.clone());
        for pts in [1, 2, 2, 3, 1, 5, 4, 5, 6] {
            deliver(&hub, 1, pts, 0);
        }
        // A relay restart replays from its last confirmed position: 1..=3 come again.
        let r = deliver(&hub, 1, 3, 0);
        assert_eq!(r.duplicates, 1);
        assert_eq!(q.pts(), vec![1, 2, 3, 5, 6]);
    }

    #[test]
    fn the_origins_own_pts_still_count_as_seen() {
        let hub = Hub::new();
        let q = Queue::new(8);
        hub.register(user(1), AuthKeyId(11), q.clone());
        deliver(&hub, 1, 1, 11);
        let r = deliver(&hub, 1, 1, 0);
        assert_eq!(r.duplicates, 1);
        assert!(q.take().is_empty());
    }

    #[test]
    fn a_full_buffer_gets_updates_too_long_once_then_nothing() {
        let hub = Hub::new();
        let slow = Queue::new(3);
        let fast = Queue::new(100);
        hub.register(user(1), AuthKeyId(11), slow.clone());
        hub.register(user(1), AuthKeyId(12), fast.clone());
        let mut too_long = 0;
        for pts in 1..=10 {
            too_long += deliver(&hub, 1, pts, 0).too_long;
        }
        assert_eq!(too_long, 1);
        // Two frames fit (one slot stays reserved), then updatesTooLong, then silence.
        assert_eq!(slow.pts(), vec![1, 2, -1]);
        let r = deliver(&hub, 1, 11, 0);
        assert_eq!((r.suppressed, r.pushed), (1, 1));
        assert!(slow.take().is_empty());
        assert_eq!(fast.pts(), (1..=11).collect::<Vec<_>>());
    }

    #[test]
    fn a_reconnected_device_is_a_new_registration() {
        let hub = Hub::new();
        let old = Queue::new(1);
        let id = hub.register(user(1), AuthKeyId(11), old.clone());
        deliver(&hub, 1, 1, 0);
        assert_eq!(old.pts(), vec![-1]);
        hub.unregister(user(1), id);
        assert!(!hub.has_devices(user(1)));
        let new = Queue::new(8);
        hub.register(user(1), AuthKeyId(11), new.clone());
        deliver(&hub, 1, 2, 0);
        assert_eq!(new.pts(), vec![2]);
    }

    #[test]
    fn closed_devices_are_forgotten() {
        let hub = Hub::new();
        let q = Queue::new(8);
        hub.register(user(1), AuthKeyId(11), q.clone());
        q.close();
        let r = deliver(&hub, 1, 1, 0);
        assert_eq!(r.closed, 1);
        assert_eq!(hub.devices_online(), 0);
        assert!(!hub.has_devices(user(1)));
    }

    #[test]
    fn one_push_per_auth_key_to_the_connection_called_last() {
        let hub = Hub::new();
        let (main, media, other) = (Queue::new(8), Queue::new(8), Queue::new(8));
        let m = hub.register_connection(user(1), AuthKeyId(11), main.clone());
        hub.register_connection(user(1), AuthKeyId(11), media.clone());
        hub.register_connection(user(1), AuthKeyId(12), other.clone());
        // The newest connection is current until a call is made elsewhere.
        let r = deliver(&hub, 1, 1, 0);
        assert_eq!((r.pushed, r.standby), (2, 1));
        assert_eq!((main.pts(), media.pts()), (vec![], vec![1]));
        hub.make_current(user(1), m);
        deliver(&hub, 1, 2, 0);
        // The pts it skipped as standby is not pushed later: the key has it.
        assert_eq!((main.pts(), media.pts()), (vec![2], vec![]));
        assert_eq!(other.pts(), vec![1, 2], "another key has its own push");
        // The current one goes away: the other connection of the key takes over.
        hub.unregister(user(1), m);
        deliver(&hub, 1, 3, 0);
        assert_eq!(media.pts(), vec![3]);
        // WebSocket devices of one key each get every push.
        let (w1, w2) = (Queue::new(8), Queue::new(8));
        hub.register(user(2), AuthKeyId(21), w1.clone());
        hub.register(user(2), AuthKeyId(21), w2.clone());
        deliver(&hub, 2, 1, 0);
        assert_eq!((w1.pts(), w2.pts()), (vec![1], vec![1]));
    }

    #[test]
    fn a_frame_to_the_origin_reaches_the_device_that_caused_it() {
        let hub = Hub::new();
        let q = Queue::new(8);
        hub.register(user(1), AuthKeyId(11), q.clone());
        let mut f = frame(1);
        f.to_origin = true;
        let delivery = Delivery {
            user_id: user(1),
            pts: 1,
            origin: AuthKeyId(11),
        };
        assert_eq!(hub.deliver(&delivery, &f).pushed, 1);
        assert_eq!(q.pts(), vec![1]);
    }
}
