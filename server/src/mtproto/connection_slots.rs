//! The caps on open connections, in total and per address ([`super::limits`]): a slot is taken
//! when a connection is accepted and given back when it closes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use super::limits::address_key;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SlotRefused {
    #[error("too many MTProto connections")]
    Total,
    #[error("too many MTProto connections from this address")]
    PerAddress,
}

#[derive(Default)]
struct Counts {
    total: usize,
    per_address: HashMap<IpAddr, usize>,
}

/// Open connections, counted.
pub struct ConnectionSlots {
    max_total: usize,
    max_per_address: usize,
    counts: Mutex<Counts>,
}

/// One open connection's slot; dropping it frees the slot.
pub struct Slot {
    slots: Arc<ConnectionSlots>,
    address: IpAddr,
}

impl ConnectionSlots {
    pub fn new(max_total: usize, max_per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_per_address,
            counts: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a connection from `ip`, unless a cap is reached.
    pub fn acquire(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, SlotRefused> {
        let address = address_key(ip);
        let mut c = self.lock();
        if c.total >= self.max_total {
            return Err(SlotRefused::Total);
        }
        // Entries exist only while connections are open: the map holds at most max_total.
        let n = c.per_address.get(&address).copied().unwrap_or(0);
        if n >= self.max_per_address {
            return Err(SlotRefused::PerAddress);
        }
        c.per_address.insert(address, n + 1);
        c.total += 1;
        Ok(Slot {
            slots: self.clone(),
            address,
        })
    }

    /// Connections open now (from `ip`'s address).
    #[cfg(test)]
    pub fn open(&self, ip: Option<IpAddr>) -> usize {
        let c = self.lock();
        match ip {
            None => c.total,
            Some(ip) => c.per_address.get(&address_key(ip)).copied().unwrap_or(0),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.slots.lock();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.per_address.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                c.per_address.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_address_and_total_caps_at_their_boundary() {
        let slots = ConnectionSlots::new(5, 3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let held: Vec<Slot> = (0..3).map(|_| slots.acquire(a).unwrap()).collect();
        assert_eq!(slots.acquire(a).err(), Some(SlotRefused::PerAddress));
        let b1 = slots.acquire(b).unwrap();
        let b2 = slots.acquire(b).unwrap();
        assert_eq!(slots.open(None), 5);
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        assert_eq!(slots.acquire(c).err(), Some(SlotRefused::Total));
        // Closing frees the slot.
        drop(b2);
        assert!(slots.acquire(c).is_ok());
        drop(held);
        assert_eq!(slots.open(Some(a)), 0);
        assert!(slots.acquire(a).is_ok());
        drop(b1);
        assert_eq!(slots.open(None), 0, "every slot given back");
    }
}
