import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("logprob_style.py")
launch_gradio_widget(module)
