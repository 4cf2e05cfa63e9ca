//! Config errors at the CLI boundary: exit 2 and a message naming file, line and column.
