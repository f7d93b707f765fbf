// The layer the fixture includes correctly.
