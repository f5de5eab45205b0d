//! Scripted opponent (coming next).
