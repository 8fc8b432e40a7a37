//! A device's bounded buffer: a tokio channel whose receiving end is the device's socket writer.

use application::fanout::{DeviceChannel, Outgoing, PushError};
use tokio::sync::mpsc;

pub struct DeviceSender(pub mpsc::Sender<Outgoing>);

impl DeviceChannel for DeviceSender {
    fn free_slots(&self) -> usize {
        self.0.capacity()
    }

    fn try_push(&self, item: Outgoing) -> Result<(), PushError> {
        self.0.try_send(item).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => PushError::Full,
            mpsc::error::TrySendError::Closed(_) => PushError::Closed,
        })
    }
}
