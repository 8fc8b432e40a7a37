//! What the send methods (sendMessage, sendMedia, sendMultiMedia, and in part forwardMessages)
//! carry besides their content: one struct each request flattens in, so the flags are declared,
//! and the options private chats here do not have are refused, in one place.

use domain::DomainError;
use serde::Deserialize;
use serde_json::Value;

use crate::tl::InputReplyTo;

/// The flags and the reply of messages.sendMessage, sendMedia and sendMultiMedia.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SendOptions {
    #[serde(default)]
    pub silent: bool,
    #[serde(default)]
    pub background: bool,
    #[serde(default)]
    pub clear_draft: bool,
    #[serde(default)]
    pub noforwards: bool,
    #[serde(default)]
    pub update_stickersets_order: bool,
    #[serde(default)]
    pub invert_media: bool,
    #[serde(default)]
    pub reply_to: Option<InputReplyTo>,
    #[serde(flatten)]
    pub out_of_scope: OutOfScope,
}

/// Options of every send method that private chats here do not have. Only their presence is
/// looked at: a request with one is refused whole, so none reaches the log.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OutOfScope {
    #[serde(default)]
    pub schedule_date: Option<i32>,
    #[serde(default)]
    pub send_as: Option<Value>,
    #[serde(default)]
    pub reply_markup: Option<Value>,
    #[serde(default)]
    pub quick_reply_shortcut: Option<Value>,
    #[serde(default)]
    pub effect: Option<Value>,
    #[serde(default)]
    pub allow_paid_stars: Option<Value>,
    #[serde(default)]
    pub suggested_post: Option<Value>,
}

impl OutOfScope {
    /// Refuses the first option set, with the seed's explicit errors.
    pub fn refuse(&self) -> Result<(), DomainError> {
        let refusals = [
            (
                self.schedule_date.is_some(),
                DomainError::ScheduleDateInvalid,
            ),
            (self.send_as.is_some(), DomainError::SendAsPeerInvalid),
            (self.reply_markup.is_some(), DomainError::ReplyMarkupInvalid),
            (
                self.quick_reply_shortcut.is_some(),
                DomainError::ShortcutInvalid,
            ),
            (self.effect.is_some(), DomainError::EffectIdInvalid),
            (
                self.allow_paid_stars.is_some(),
                DomainError::PaymentUnsupported,
            ),
            (
                self.suggested_post.is_some(),
                DomainError::SuggestedPostPeerInvalid,
            ),
        ];
        match refusals.into_iter().find(|(set, _)| *set) {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_set_passes() {
        assert_eq!(OutOfScope::default().refuse(), Ok(()));
    }

    #[test]
    fn each_option_is_refused_with_its_error() {
        let cases = [
            (
                "schedule_date",
                serde_json::json!(1),
                DomainError::ScheduleDateInvalid,
            ),
            (
                "send_as",
                serde_json::json!({"_": "inputPeerSelf"}),
                DomainError::SendAsPeerInvalid,
            ),
            (
                "reply_markup",
                serde_json::json!({}),
                DomainError::ReplyMarkupInvalid,
            ),
            (
                "quick_reply_shortcut",
                serde_json::json!({}),
                DomainError::ShortcutInvalid,
            ),
            ("effect", serde_json::json!(5), DomainError::EffectIdInvalid),
            (
                "allow_paid_stars",
                serde_json::json!(1),
                DomainError::PaymentUnsupported,
            ),
            (
                "suggested_post",
                serde_json::json!({}),
                DomainError::SuggestedPostPeerInvalid,
            ),
        ];
        for (field, value, error) in cases {
            let options: SendOptions =
                serde_json::from_value(serde_json::json!({ field: value, "silent": true }))
                    .unwrap();
            assert!(options.silent, "{field}: the flags still read beside it");
            assert_eq!(options.out_of_scope.refuse(), Err(error), "{field}");
        }
    }

    #[test]
    fn flattened_into_a_request_it_reads_its_fields_and_leaves_the_rest() {
        #[derive(Deserialize)]
        struct Request {
            message: String,
            #[serde(flatten)]
            options: SendOptions,
        }
        let r: Request = serde_json::from_value(serde_json::json!({
            "_": "messages.sendMessage",
            "message": "hi",
            "noforwards": true,
            "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 3},
        }))
        .unwrap();
        assert_eq!(r.message, "hi");
        assert!(r.options.noforwards && !r.options.silent);
        assert!(r.options.reply_to.is_some());
        assert_eq!(r.options.out_of_scope.refuse(), Ok(()));
    }
}
