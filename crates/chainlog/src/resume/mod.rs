//! From a resolved chain to what a resume hands over: the lines of the view read by offset,
//! projected (parents re-pointed, usage zeroed), rendered, and checked for interrupts.

pub mod api;
pub mod body;
pub mod fork;
pub mod interrupt;
pub mod message;
pub mod shallow;
pub mod text;
pub mod trailing;

pub use api::{
    ApiOptions, INTERRUPTED_TOOL_CALL, NO_CONTENT, NO_RESPONSE_REQUESTED, TOOL_LOADED,
    TOOL_REFERENCES_REMOVED, TOOL_RESULT_MISSING, api_messages, api_messages_of,
};
pub use body::{Lines, ViewEntry, read_view};
pub use fork::{ForkContext, fork_context};
pub use interrupt::{Interrupt, detect};
