"""Examples shipped with tta (also used by its tests and GPU checks)."""
