"""Pure data and rules: job specs, states, errors. No I/O."""
