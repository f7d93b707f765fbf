/* A library that exports a symbol without the prefix: the export check must reject it. */
int neuronmem_good_symbol(void) { return 1; }
int unprefixed_symbol(void) { return 2; }
