//! The kinds of metadata entries the generator writes between turns, and their order.

/// Metadata kinds written mid-file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Meta {
    CustomTitle,
    Tag,
    LastPrompt,
    AiTitle,
    Summary,
    Mode,
    ContentReplacement,
    Unknown,
    TagClear,
    PermissionMode,
    AgentName,
    PrLink,
    WorktreeState,
    QueueOps,
}

/// Every kind, in the order the first ones are written (then at random).
pub(super) const META_ORDER: &[Meta] = &[
    Meta::CustomTitle,
    Meta::Tag,
    Meta::LastPrompt,
    Meta::AiTitle,
    Meta::Summary,
    Meta::Mode,
    Meta::ContentReplacement,
    Meta::Unknown,
    Meta::TagClear,
    Meta::PermissionMode,
    Meta::AgentName,
    Meta::PrLink,
    Meta::WorktreeState,
    Meta::QueueOps,
];
