//! The sink without a broker: records go straight to this process's fanout. Nothing is durable
//! past the hand-over, and nothing needs to be: a device that misses a push (this process
//! restarted, it was offline) catches up with `updates.getDifference`, so the relay may confirm at
//! once.

use std::sync::Arc;

use application::fanout::{LogRecord, RecordHandler};
use async_trait::async_trait;
use futures::FutureExt;

use super::sink::{Ack, RecordSink, SinkError};

pub struct LocalSink {
    handler: Arc<dyn RecordHandler>,
}

impl LocalSink {
    pub fn new(handler: Arc<dyn RecordHandler>) -> Self {
        Self { handler }
    }
}

#[async_trait]
impl RecordSink for LocalSink {
    fn kind(&self) -> &'static str {
        "local"
    }

    async fn reset(&self) -> Result<(), SinkError> {
        Ok(())
    }

    async fn send(&self, records: Vec<LogRecord>) -> Result<Ack, SinkError> {
        self.handler.handle(&records).await;
        Ok(futures::future::ready(Ok(())).boxed())
    }
}
