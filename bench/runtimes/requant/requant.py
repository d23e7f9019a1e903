"""Re-quantizes a GGUF's Q4_1 tensors to another type (Q8_0 or Q4_0), everything else as is,
with gguf-py (PyPI `gguf`): the same model, to measure how llama.cpp's wasm build speeds with
the weight type (docs/design.md, "A model in the page", "What bounds the speed").

    python requant.py IN.gguf OUT.gguf Q8_0
"""
import sys

import gguf
import numpy as np
from gguf import quants


def main() -> None:
    src, dst, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    target = gguf.GGMLQuantizationType[kind]
    reader = gguf.GGUFReader(src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(dst, arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        if field.name == gguf.Keys.General.FILE_TYPE:
            continue
        writer.add_key_value(field.name, field.contents(), val_type, sub_type=sub_type)
    out = []
    for t in reader.tensors:
        if t.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            values = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            data = quants.quantize(values, target)
            out.append((t.name, data, target))
        else:
            out.append((t.name, t.data, t.tensor_type))
    for name, data, kind_ in out:
        # Quantized data's shape is in bytes per row; the writer converts it.
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, kind_)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in out:
        writer.write_tensor_data(data)
    writer.close()


main()
