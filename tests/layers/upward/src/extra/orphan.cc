// A folder of src/ that is no layer (tests/layers/upward/README.md).
