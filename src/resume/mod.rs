//! From a resolved chain to what a resume hands over: the lines of the view read by offset,
//! projected (parents re-pointed, usage zeroed), rendered, and checked for interrupts.

pub mod body;
pub mod interrupt;
pub mod message;
pub mod text;

pub use body::{ViewEntry, read_view};
pub use interrupt::{Interrupt, detect};
