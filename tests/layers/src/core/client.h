// The layer above copy.
