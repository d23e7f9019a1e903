use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use std::io::Cursor;
use wasm_bindgen::prelude::*;

fn now() -> f64 {
    js_sys::Date::now()
}

fn perf_now() -> f64 {
    // performance.now() via global
    let g = js_sys::global();
    let perf = js_sys::Reflect::get(&g, &JsValue::from_str("performance")).ok();
    if let Some(p) = perf {
        if let Ok(f) = js_sys::Reflect::get(&p, &JsValue::from_str("now")) {
            if let Ok(f) = f.dyn_into::<js_sys::Function>() {
                if let Ok(v) = f.call0(&p) {
                    if let Some(x) = v.as_f64() {
                        return x;
                    }
                }
            }
        }
    }
    now()
}

fn e<E: std::fmt::Display>(x: E) -> JsValue {
    JsValue::from_str(&x.to_string())
}

fn argmax(logits: &Tensor) -> Result<u32, JsValue> {
    let l = logits.squeeze(0).map_err(e)?;
    let l = if l.rank() > 1 { l.get(l.dim(0).map_err(e)? - 1).map_err(e)? } else { l };
    l.argmax(0).map_err(e)?.to_scalar::<u32>().map_err(e)
}

/// Returns JSON: {load_ms, prompt_ms, decode_ms, decode_tokens, tok_per_s, tokens:[...]}
#[wasm_bindgen]
pub fn bench(bytes: &[u8], n_prompt: u32, n_decode: u32) -> Result<String, JsValue> {
    let dev = Device::Cpu;
    let t0 = perf_now();
    let mut cur = Cursor::new(bytes);
    let content = gguf_file::Content::read(&mut cur).map_err(e)?;
    let mut model = ModelWeights::from_gguf(content, &mut cur, &dev).map_err(e)?;
    let t1 = perf_now();
    let prompt: Vec<u32> = (1..=n_prompt).collect();
    let input = Tensor::new(prompt.as_slice(), &dev).map_err(e)?.unsqueeze(0).map_err(e)?;
    let logits = model.forward(&input, 0).map_err(e)?;
    let mut next = argmax(&logits)?;
    let t2 = perf_now();
    let mut toks = vec![next];
    let mut pos = prompt.len();
    // decode n_decode - 1 more tokens (first token came from the prompt pass)
    for _ in 1..n_decode {
        let input = Tensor::new(&[next], &dev).map_err(e)?.unsqueeze(0).map_err(e)?;
        let logits = model.forward(&input, pos).map_err(e)?;
        next = argmax(&logits)?;
        toks.push(next);
        pos += 1;
    }
    let t3 = perf_now();
    let decode_ms = t3 - t2;
    let decode_tokens = (n_decode - 1) as f64;
    Ok(format!(
        "{{\"load_ms\":{:.1},\"prompt_ms\":{:.1},\"decode_ms\":{:.1},\"decode_tokens\":{},\"tok_per_s\":{:.3},\"tokens\":{:?}}}",
        t1 - t0,
        t2 - t1,
        decode_ms,
        decode_tokens,
        decode_tokens / (decode_ms / 1000.0),
        toks
    ))
}
