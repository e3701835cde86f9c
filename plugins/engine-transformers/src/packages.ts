/**
 * The Python packages of the engine's virtual environment, which its weights generator shares so that both use one
 * environment. torch is pinned to the release whose CPU build pip finds among the machine's wheels when its pip
 * configuration points there (pip's own index would give the CUDA build, several GB); on a GPU machine, register
 * the model with a `virtualenv` that names the torch build to use. pillow: OCR models' processors read pictures
 * with it (torchvision, which transformers would use instead, is not needed).
 */
export const TRANSFORMERS_PACKAGES = ['transformers>=5,<6', 'torch==2.13.0', 'safetensors', 'tokenizers', 'pillow']
