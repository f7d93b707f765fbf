/* manifest.h from C (issue 26 item 3): the composites of a manifest (jax.lax.composite's export, pretty and
 * generic forms) with their name, decomposition, version and composite_attributes; a counts struct of the
 * previous published size is left alone past num_warnings; bad indices and NULLs get a status. */
#include <stddef.h>

#include "c_test.h"

static int eq(neuronmem_string_t s, const char* want) {
  return s.size == strlen(want) && memcmp(s.data, want, s.size) == 0;
}

int main(void) {
  static const char text[] =
      "func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = stablehlo.composite \"my.scale_shift\" %arg0 {composite_attributes = {scale = 2.000000e+00 : f32,\n"
      "    shift = dense<[1, 2]> : tensor<2xi64>, tag = \"fast\"}, decomposition = @my.scale_shift, version = 3 : "
      "i32}\n"
      "    : (tensor<4xf32>) -> tensor<4xf32>\n"
      "  %1 = \"stablehlo.composite\"(%0, %arg1) {decomposition = @add_impl, name = \"ns.add\"}\n"
      "    : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  return %1 : tensor<4xf32>\n"
      "}\n"
      "func.func private @my.scale_shift(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  return %arg0 : tensor<4xf32>\n"
      "}\n"
      "func.func private @add_impl(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n"
      "}\n";
  neuronmem_manifest_t* m = NULL;
  CHECK(code_of(neuronmem_manifest_load_text(text, sizeof text - 1, NULL, &m)) == NEURONMEM_STATUS_OK);
  if (!m) return 1;

  neuronmem_manifest_counts_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = NEURONMEM_MANIFEST_COUNTS_STRUCT_SIZE;
  CHECK(code_of(neuronmem_manifest_counts(m, &c)) == NEURONMEM_STATUS_OK);
  CHECK(c.num_composites == 2);

  /* A caller built against the previous counts struct: num_composites is beyond it and left alone. */
  neuronmem_manifest_counts_t old;
  memset(&old, 0, sizeof old);
  old.struct_size = offsetof(neuronmem_manifest_counts_t, num_composites);
  old.num_composites = 77;
  CHECK(code_of(neuronmem_manifest_counts(m, &old)) == NEURONMEM_STATUS_OK);
  CHECK(old.num_arguments == 2 && old.num_composites == 77);

  neuronmem_manifest_composite_t k;
  memset(&k, 0, sizeof k);
  k.struct_size = NEURONMEM_MANIFEST_COMPOSITE_STRUCT_SIZE;
  CHECK(code_of(neuronmem_manifest_composite(m, 0, &k)) == NEURONMEM_STATUS_OK);
  CHECK(eq(k.function, "main"));
  CHECK(eq(k.name, "my.scale_shift"));
  CHECK(eq(k.decomposition, "my.scale_shift"));
  CHECK(k.version == 3);
  CHECK(k.num_attributes == 3);
  CHECK(k.line == 2 && k.column == 3);
  neuronmem_string_t key, value;
  CHECK(code_of(neuronmem_manifest_composite_attribute(m, 0, 0, &key, &value)) == NEURONMEM_STATUS_OK);
  CHECK(eq(key, "scale"));
  CHECK(eq(value, "2.000000e+00 : f32"));
  CHECK(code_of(neuronmem_manifest_composite_attribute(m, 0, 1, &key, &value)) == NEURONMEM_STATUS_OK);
  CHECK(eq(key, "shift"));
  CHECK(eq(value, "dense<[1, 2]> : tensor<2xi64>"));
  CHECK(code_of(neuronmem_manifest_composite_attribute(m, 0, 2, &key, &value)) == NEURONMEM_STATUS_OK);
  CHECK(eq(key, "tag"));
  CHECK(eq(value, "fast")); /* a string without its quotes */
  CHECK(code_of(neuronmem_manifest_composite_attribute(m, 0, 3, &key, &value)) == NEURONMEM_STATUS_OUT_OF_RANGE);

  /* The generic form: name from the attribute, no version (the spec's default 0), no attributes. */
  CHECK(code_of(neuronmem_manifest_composite(m, 1, &k)) == NEURONMEM_STATUS_OK);
  CHECK(eq(k.name, "ns.add") && eq(k.decomposition, "add_impl") && k.version == 0 && k.num_attributes == 0);
  CHECK(k.line == 5);
  CHECK(code_of(neuronmem_manifest_composite_attribute(m, 1, 0, &key, &value)) == NEURONMEM_STATUS_OUT_OF_RANGE);

  k.struct_size = NEURONMEM_MANIFEST_COMPOSITE_STRUCT_SIZE;
  CHECK(code_of(neuronmem_manifest_composite(m, 2, &k)) == NEURONMEM_STATUS_OUT_OF_RANGE);
  CHECK(code_of(neuronmem_manifest_composite(m, 0, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(code_of(neuronmem_manifest_composite(NULL, 0, &k)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  k.struct_size = offsetof(neuronmem_manifest_composite_t, column);
  CHECK(code_of(neuronmem_manifest_composite(m, 0, &k)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  k.struct_size = NEURONMEM_MANIFEST_COMPOSITE_STRUCT_SIZE;
  CHECK(code_of(neuronmem_manifest_composite_attribute(m, 0, 0, NULL, &value)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_manifest_destroy(m);

  /* A manifest without composites. */
  static const char plain[] = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n";
  CHECK(code_of(neuronmem_manifest_load_text(plain, sizeof plain - 1, NULL, &m)) == NEURONMEM_STATUS_OK);
  if (m) {
    CHECK(code_of(neuronmem_manifest_counts(m, &c)) == NEURONMEM_STATUS_OK);
    CHECK(c.num_composites == 0);
    CHECK(code_of(neuronmem_manifest_composite(m, 0, &k)) == NEURONMEM_STATUS_OUT_OF_RANGE);
    neuronmem_manifest_destroy(m);
  }
  return failures ? 1 : 0;
}
