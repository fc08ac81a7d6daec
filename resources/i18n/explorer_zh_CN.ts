<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>Caption</name>
    <message>
        <location filename="../../gui/window_captions.py" line="41"/>
        <source>rule {0}</source>
        <translation>规则 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="43"/>
        <source>Real q, k of {0} (n = {1}, d_k = {2}) · {3}</source>
        <translation>{0} 的真实 q, k（n = {1}，d_k = {2}）· {3}</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="46"/>
        <source>projections W_Q, W_K (d_model = {0}, s = {1})</source>
        <translation>投影 W_Q、W_K（d_model = {0}，s = {1}）</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="50"/>
        <source>Random q, k: n = {0}, d_k = {1}, {2}, ρ = {3}, seed {4}</source>
        <translation>随机 q, k：n = {0}，d_k = {1}，{2}，ρ = {3}，随机种子 {4}</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="53"/>
        <source>causal mask</source>
        <translation>因果掩码</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="61"/>
        <source>learning rates {0} … {1}, {2} seeds</source>
        <translation>学习率 {0} … {1}，{2} 个种子</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="64"/>
        <source>learning rate {0}, seed {1}</source>
        <translation>学习率 {0}，种子 {1}</translation>
    </message>
    <message>
        <location filename="../../gui/window_captions.py" line="66"/>
        <source>Trained: n = {0}, d_k = {1}, rules {2} · {3}, init std {4}, {5} steps</source>
        <translation>训练：n = {0}，d_k = {1}，规则 {2} · {3}，初始化标准差 {4}，{5} 步</translation>
    </message>
</context>
<context>
    <name>CaptureDialog</name>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="191"/>
        <source>{0}/{1} layers</source>
        <extracomment>The largest &quot;Max tokens&quot; the dialog offers (the model&apos;s own positions bound it further).</extracomment>
        <translation>{0}/{1} 层</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="194"/>
        <source>Running {0}…</source>
        <translation>正在运行 {0}…</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="205"/>
        <source>Opening the model…</source>
        <translation>正在打开模型…</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="208"/>
        <source>Cancelled: nothing was captured.</source>
        <translation>已取消：什么也没有捕获。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="230"/>
        <source>Not captured: {0}</source>
        <translation>未捕获：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="248"/>
        <source>Open model</source>
        <translation>打开模型</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="249"/>
        <source>&amp;Model:</source>
        <translation>模型(&amp;M)：</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="111"/>
        <source>a Hugging Face model folder or a .gguf file</source>
        <extracomment>The sentence a text box starts with (the one docs/heads.md&apos;s SmolLM2 figures were made on).</extracomment>
        <translation>Hugging Face 模型文件夹或 .gguf 文件</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="113"/>
        <source>A folder with config.json, model.safetensors (or a sharded model.safetensors.index.json) and tokenizer.json, or a GGUF file of the llama architecture. Weights stay on disk, memory-mapped; no PyTorch is needed.</source>
        <translation>含 config.json、model.safetensors（或分片的 model.safetensors.index.json）和 tokenizer.json 的文件夹，或 llama 架构的 GGUF 文件。权重留在磁盘上、以内存映射读取；不需要 PyTorch。</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="117"/>
        <source>&amp;Folder…</source>
        <translation>文件夹(&amp;F)…</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="118"/>
        <source>&amp;GGUF file…</source>
        <translation>GGUF 文件(&amp;G)…</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="252"/>
        <source>&amp;Text:</source>
        <translation>文本(&amp;T)：</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="254"/>
        <source>The text the model reads, tokenized with its own tokenizer (special tokens added as the model does).</source>
        <translation>模型读取的文本，用模型自己的分词器切分（按模型的默认方式添加特殊 token）。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="256"/>
        <source>Load te&amp;xt file…</source>
        <translation>载入文本文件(&amp;X)…</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="257"/>
        <source>&amp;Default sentence</source>
        <translation>默认句子(&amp;D)</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="258"/>
        <source>Max &amp;tokens:</source>
        <translation>最多 token 数(&amp;K)：</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="260"/>
        <source>A longer text is cut to its first tokens; memory and time grow with n².</source>
        <translation>更长的文本只保留前面的 token；内存和时间随 n² 增长。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="262"/>
        <source>&amp;Layers:</source>
        <translation>层(&amp;L)：</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="264"/>
        <source>all (or e.g. 0,2,5-7)</source>
        <translation>全部（或例如 0,2,5-7）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="265"/>
        <source>Layers whose q and k are kept; empty keeps every layer.</source>
        <translation>保留其 q 和 k 的层；留空则保留所有层。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="267"/>
        <source>Memory l&amp;imit:</source>
        <translation>内存上限(&amp;I)：</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="269"/>
        <source>The most memory the capture may allocate. It is estimated from the layers and tokens chosen (weights are converted one at a time) before the model runs; a capture over the limit is refused and says how many tokens fit.</source>
        <translation>捕获最多可以分配的内存。模型运行前按所选的层和词元数计算所需内存（权重逐个转换）；超过上限时不会捕获，并说明最多可以用多少个词元。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="273"/>
        <source>Also keep &amp;v</source>
        <translation>同时保留 &amp;v</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="274"/>
        <source>Store the values too (the file grows by half); the Heads tab needs q and k only.</source>
        <translation>也保存 value（文件增大一半）；注意力头标签页只需要 q 和 k。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="277"/>
        <source>&amp;Capture</source>
        <translation>捕获(&amp;C)</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="278"/>
        <source>Run the model on the text and open every head in the Heads tab</source>
        <translation>在文本上运行模型，并在注意力头标签页中打开每个头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="284"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="285"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="302"/>
        <source>{0}: no such file or folder</source>
        <translation>{0}：没有这个文件或文件夹</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="322"/>
        <source>The text had {0:,} characters; the box keeps the first {1:,} (more than any model reads as tokens).</source>
        <translation>文本有 {0:,} 个字符；文本框只保留前 {1:,} 个（多于任何模型能读的词元数）。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="328"/>
        <source>Cancelling…</source>
        <translation>正在取消…</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="123"/>
        <source>Hugging Face model folder</source>
        <translation>Hugging Face 模型文件夹</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="130"/>
        <source>GGUF model file</source>
        <translation>GGUF 模型文件</translation>
    </message>
    <message>
        <location filename="../../gui/kit/model_input.py" line="131"/>
        <source>GGUF files (*.gguf);;All files (*)</source>
        <translation>GGUF 文件 (*.gguf);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="341"/>
        <source>Text file</source>
        <translation>文本文件</translation>
    </message>
    <message>
        <location filename="../../gui/heads/capture_dialog.py" line="342"/>
        <source>Text files (*.txt *.md);;All files (*)</source>
        <translation>文本文件 (*.txt *.md);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../../gui/heads/token_count.py" line="76"/>
        <source>{0:,} of {1:,} tokens</source>
        <translation>{1:,} 个 token 中的 {0:,} 个</translation>
    </message>
    <message>
        <location filename="../../gui/heads/token_count.py" line="79"/>
        <source>{0:,} of more than {1:,} tokens</source>
        <translation>超过 {1:,} 个 token 中的 {0:,} 个</translation>
    </message>
    <message>
        <location filename="../../gui/heads/token_count.py" line="81"/>
        <source>The text was cut to its first tokens by Max tokens; the capture holds those only.</source>
        <translation>最多 token 数只保留了文本前面的 token；捕获只含这些。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/token_count.py" line="87"/>
        <source>Use all {0:,}</source>
        <translation>用全部 {0:,} 个</translation>
    </message>
    <message>
        <location filename="../../gui/heads/token_count.py" line="89"/>
        <source>Use {0:,} (the most)</source>
        <translation>用 {0:,} 个（最多）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/token_count.py" line="91"/>
        <source>Set Max tokens to {0:,} and capture again (up to the positions the model reads; memory and time grow with n²).</source>
        <translation>把最多 token 数设为 {0:,} 并重新捕获（不超过模型读取的位置数；内存和时间随 n² 增长）。</translation>
    </message>
</context>
<context>
    <name>CorrelationView</name>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="76"/>
        <source>q–k correlation</source>
        <extracomment>(rule, key suffix in the engine&apos;s correlation_rms result) of the rules shown.</extracomment>
        <translation>q–k 相关性</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="80"/>
        <source>RMS of c·q·k</source>
        <translation>c·q·k 的均方根 (RMS)</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="84"/>
        <source>{0} Monte Carlo</source>
        <translation>{0} 蒙特卡洛</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="100"/>
        <source>k = ρq + √(1−ρ²)ξ with ρ = {0}</source>
        <translation>k = ρq + √(1−ρ²)ξ，ρ = {0}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="103"/>
        <source>At ρ = 0, 1/√d&lt;sub&gt;k&lt;/sub&gt; keeps the RMS at 1 for every d&lt;sub&gt;k&lt;/sub&gt;; 1/d&lt;sub&gt;k&lt;/sub&gt; shrinks it like 1/√d&lt;sub&gt;k&lt;/sub&gt; (too flat).</source>
        <translation>ρ = 0 时，1/√d&lt;sub&gt;k&lt;/sub&gt; 对任意 d&lt;sub&gt;k&lt;/sub&gt; 都使 RMS 保持为 1；1/d&lt;sub&gt;k&lt;/sub&gt; 则使其按 1/√d&lt;sub&gt;k&lt;/sub&gt; 缩小（分布过于平坦）。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="109"/>
        <source>At ρ ≠ 0, q·k grows like ρ·d&lt;sub&gt;k&lt;/sub&gt;: under 1/√d&lt;sub&gt;k&lt;/sub&gt; the RMS grows like |ρ|·√d&lt;sub&gt;k&lt;/sub&gt;, while 1/d&lt;sub&gt;k&lt;/sub&gt; keeps it bounded (→ |ρ| = {0}), as μP prescribes.</source>
        <translation>ρ ≠ 0 时，q·k 按 ρ·d&lt;sub&gt;k&lt;/sub&gt; 增长：在 1/√d&lt;sub&gt;k&lt;/sub&gt; 下 RMS 按 |ρ|·√d&lt;sub&gt;k&lt;/sub&gt; 增长，而 1/d&lt;sub&gt;k&lt;/sub&gt; 使其保持有界（→ |ρ| = {0}），正如 μP 所规定。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/correlation.py" line="116"/>
        <source>1/√d&lt;sub&gt;k&lt;/sub&gt; normalises independent q, k (ρ = 0); 1/d&lt;sub&gt;k&lt;/sub&gt; normalises correlated ones (ρ ≠ 0).</source>
        <translation>1/√d&lt;sub&gt;k&lt;/sub&gt; 归一化相互独立的 q、k（ρ = 0）；1/d&lt;sub&gt;k&lt;/sub&gt; 归一化相关的 q、k（ρ ≠ 0）。</translation>
    </message>
</context>
<context>
    <name>Form</name>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="38"/>
        <source>Link Axis:</source>
        <translation>关联轴：</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="38"/>
        <source>Auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="39"/>
        <source>Manual</source>
        <translation>手动</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="39"/>
        <source>Invert Axis</source>
        <translation>反转轴</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="40"/>
        <source>Mouse Enabled</source>
        <translation>启用鼠标</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="40"/>
        <source>Visible Data Only</source>
        <translation>只用可见数据</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="41"/>
        <source>Auto Pan Only</source>
        <translation>只自动平移</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="41"/>
        <source>Alpha</source>
        <translation>Alpha 值</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="42"/>
        <source>Average</source>
        <translation>平均</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="42"/>
        <source>Clip to View</source>
        <translation>只绘制视图内的部分</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="43"/>
        <source>Downsample</source>
        <translation>降采样</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="43"/>
        <source>Forget hidden traces</source>
        <translation>不保留隐藏的曲线</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="44"/>
        <source>Log X</source>
        <translation>对数 X</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="44"/>
        <source>Log Y</source>
        <translation>对数 Y</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="45"/>
        <source>Max Traces:</source>
        <translation>最多曲线数：</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="45"/>
        <source>Mean</source>
        <translation>均值</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="46"/>
        <source>Opacity</source>
        <translation>可见程度</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="46"/>
        <source>Peak</source>
        <translation>峰值</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="47"/>
        <source>Points</source>
        <translation>数据点</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="47"/>
        <source>Power Spectrum (FFT)</source>
        <translation>FFT 频率能量</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="48"/>
        <source>Show X Grid</source>
        <translation>显示 X 网格</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="48"/>
        <source>Show Y Grid</source>
        <translation>显示 Y 网格</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="49"/>
        <source>Subsample</source>
        <translation>抽样</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="49"/>
        <source>Subtract Mean</source>
        <translation>减去均值</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="50"/>
        <source>dy/dx</source>
        <translation>dy/dx</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="50"/>
        <source>Y vs. Y&apos;</source>
        <translation>Y 对 Y&apos;</translation>
    </message>
</context>
<context>
    <name>GradientView</name>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="209"/>
        <source>Gradients</source>
        <extracomment>(panel key, SweepPoint prefix): the two gradient quantities. Widths (px) from which the three panels stand in three or two columns; below the second they stack. Each threshold lies above that arrangement&apos;s minimum width, so the choice cannot flip back and forth as the scroll area resizes the view.</extracomment>
        <translation>梯度</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="215"/>
        <source>‖∂p/∂s‖&lt;sub&gt;F&lt;/sub&gt; (w.r.t. scaled logits)</source>
        <translation>‖∂p/∂s‖&lt;sub&gt;F&lt;/sub&gt;（对缩放后的 logit）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="219"/>
        <source>‖∂p/∂S&lt;sub&gt;raw&lt;/sub&gt;‖&lt;sub&gt;F&lt;/sub&gt; = c·‖J‖&lt;sub&gt;F&lt;/sub&gt; (w.r.t. raw q·k)</source>
        <translation>‖∂p/∂S&lt;sub&gt;raw&lt;/sub&gt;‖&lt;sub&gt;F&lt;/sub&gt; = c·‖J‖&lt;sub&gt;F&lt;/sub&gt;（对原始 q·k）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="224"/>
        <source>Saturated rows</source>
        <translation>饱和行</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="225"/>
        <source>share with p&lt;sub&gt;max&lt;/sub&gt; &gt; 0.99</source>
        <translation>p&lt;sub&gt;max&lt;/sub&gt; &gt; 0.99 的比例</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="231"/>
        <source>Lines: median over query rows; bands: 10–90 % of rows.&lt;br&gt;Measured against the raw q·k, the unscaled rule (c = 1) has the larger gradient at moderate d&lt;sub&gt;k&lt;/sub&gt;; it collapses only once the softmax saturates (large d&lt;sub&gt;k&lt;/sub&gt;).</source>
        <translation>曲线：各查询行的中位数；色带：10–90 % 的行。&lt;br&gt;相对于原始 q·k 而言，不缩放规则（c = 1）在中等 d&lt;sub&gt;k&lt;/sub&gt; 下梯度更大；只有当 softmax 饱和（d&lt;sub&gt;k&lt;/sub&gt; 很大）时梯度才会坍缩。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/gradients.py" line="339"/>
        <source>Stars: this head ({0}), median over its query rows; bars: 10–90 % of its rows.</source>
        <translation>标记：此头（{0}），其各查询行的中位数；误差条：其 10–90 % 的行。</translation>
    </message>
</context>
<context>
    <name>GraphicsScene</name>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="32"/>
        <location filename="../../gui/kit/plot_menus.py" line="99"/>
        <source>Export...</source>
        <translation>导出…</translation>
    </message>
</context>
<context>
    <name>HeadsView</name>
    <message>
        <location filename="../../gui/heads/grid.py" line="181"/>
        <location filename="../../gui/heads/table.py" line="31"/>
        <source>layer</source>
        <extracomment>Flag -&gt; the letter marking it in a grid cell. Largest grid for which every cell gets its letters (beyond, only the table lists flags).</extracomment>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../../gui/heads/grid.py" line="182"/>
        <location filename="../../gui/heads/table.py" line="32"/>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/grid.py" line="217"/>
        <location filename="../../gui/heads/grid.py" line="239"/>
        <source>Click a head to replay it under every rule</source>
        <translation>点击一个头，在每种规则下重放它</translation>
    </message>
    <message>
        <location filename="../../gui/heads/replay.py" line="260"/>
        <source>key j</source>
        <extracomment>The rules shown until the user picks others: the three fixed scales and QK-norm, the four the tab&apos;s question is about (is the model&apos;s scale the right one, and what would the others do). Most maps in one row (more rules wrap to a second row). Least width of a map&apos;s column (its two-line title), and the room its axes and title take beside and above the map, in pixels. Time between two maps built ahead of the first replay, so they never add up to a pause. Fill one map per event (the tab&apos;s panel, so that no event holds the window long); an exported figure fills at once.</extracomment>
        <translation>键 j</translation>
    </message>
    <message>
        <location filename="../../gui/heads/replay.py" line="261"/>
        <source>query i</source>
        <translation>查询 i</translation>
    </message>
    <message>
        <location filename="../../gui/heads/replay.py" line="272"/>
        <source>H {0} · p̄max {1}</source>
        <translation>H {0} · p̄max {1}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="69"/>
        <source>logit std ÷ √d_k law</source>
        <translation>logit 标准差 ÷ √d_k 定律</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="58"/>
        <source>max |logit|</source>
        <translation>最大 |logit|</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="59"/>
        <source>largest unmasked |c·q·k| over all rows and batch entries</source>
        <translation>所有行与批次条目中未遮蔽 |c·q·k| 的最大值</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="50"/>
        <source>entropy ÷ uniform</source>
        <extracomment>The first is the grid&apos;s default colour: every flag shows in it (saturated and sharp heads near 0, near-uniform ones near 1, a sink pulls a head&apos;s entropy down).</extracomment>
        <translation>熵 ÷ 均匀熵</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="51"/>
        <source>mean row entropy divided by that of uniform weights over the keys each row sees (ln n without a mask; row i of a causal head sees i + 1 keys): 0 one-hot, 1 uniform</source>
        <translation>行平均熵除以各行可见键上均匀权重的熵（无遮蔽时为 ln n；因果头的第 i 行可见 i + 1 个键）：0 为独热，1 为均匀</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="54"/>
        <source>logit std</source>
        <translation>logit 标准差</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="55"/>
        <source>std of the unmasked logits at the model&apos;s own scale (about 1 for a healthy head at 1/√d_k; a grown q or k shows here)</source>
        <translation>模型自身缩放下未遮蔽 logit 的标准差（1/√d_k 下健康的头约为 1；q 或 k 变大会在此显示）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="61"/>
        <source>mean p_max</source>
        <translation>平均 p_max</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="62"/>
        <source>mean over query rows of the largest weight</source>
        <translation>各查询行最大权重的平均值</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="64"/>
        <source>saturated share</source>
        <translation>饱和占比</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="65"/>
        <source>share of the query rows that see two or more keys with p_max &gt; 0.99</source>
        <translation>可见两个及以上键的查询行中 p_max &gt; 0.99 的占比</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="81"/>
        <source>correlation of matching q and k components, each centred over the tokens first (the explorer&apos;s ρ)</source>
        <translation>q 与 k 对应分量的相关系数，各分量先在词元上中心化（即探索器中的 ρ）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="67"/>
        <source>sink mass</source>
        <translation>汇聚质量</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="68"/>
        <source>mean weight on token 0</source>
        <translation>第 0 个词元上的平均权重</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="70"/>
        <source>std of c·q·k over the unmasked logits, divided by the law&apos;s √d_k·σ(c·q)·σ(k) from the head&apos;s own spread of q and k: tests whether the logits are sums of independent products (1: they are), not whether they are large: a grown q or k grows the law too</source>
        <translation>未遮蔽 logit c·q·k 的标准差除以由该头自身 q、k 分布得到的定律预测 √d_k·σ(c·q)·σ(k)：检验 logit 是否为独立乘积之和（1 表示是），而不是其大小：q 或 k 变大时定律预测也随之变大</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="75"/>
        <source>entropy − floor at norm</source>
        <translation>熵 − 范数下的最小熵</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="76"/>
        <source>mean row entropy minus the least entropy a row with the same logit norm ‖z − z̄‖ can have (the extremal bound of Zhai et al. 2023), in nats; 0: rows as peaked as their logits allow</source>
        <translation>行平均熵减去具有相同 logit 范数 ‖z − z̄‖ 的行所能达到的最小熵（Zhai 等 2023 的极值界），单位 nat；0 表示各行已尖锐到其 logit 所允许的极限</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="80"/>
        <source>ρ(q, k)</source>
        <translation>ρ(q, k)</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="87"/>
        <source>saturated</source>
        <extracomment>Flag -&gt; its name in the table (marked for translation).</extracomment>
        <translation>饱和</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="88"/>
        <source>sharp</source>
        <translation>尖锐</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="89"/>
        <source>sink</source>
        <translation>汇聚</translation>
    </message>
    <message>
        <location filename="../../gui/heads/metrics.py" line="90"/>
        <source>near-uniform</source>
        <translation>近均匀</translation>
    </message>
    <message>
        <location filename="../../gui/heads/table.py" line="30"/>
        <source>flags</source>
        <extracomment>Role holding the value a column sorts by (numbers as numbers, not as text).</extracomment>
        <translation>标记</translation>
    </message>
    <message>
        <location filename="../../gui/heads/table.py" line="97"/>
        <source>The head&apos;s faults (thresholds: docs/heads.md); right-click a header to hide or show columns</source>
        <extracomment>The columns hidden until the user shows them: the law&apos;s ratio, the distance to the entropy floor and max |logit| read only with docs/heads.md at hand; the others fit 1024 px beside the grid.</extracomment>
        <translation>该头的问题（阈值见 docs/heads.md）；右键点击表头可隐藏或显示列</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="127"/>
        <source>Heads</source>
        <translation>注意力头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="154"/>
        <source>Colour by</source>
        <translation>着色依据</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="155"/>
        <source>Logits</source>
        <translation>Logit</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="156"/>
        <source>gain</source>
        <translation>增益</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="157"/>
        <source>cap</source>
        <translation>上限</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="159"/>
        <source>batch entry</source>
        <translation>批次条目</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="160"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="161"/>
        <source>√d_k</source>
        <translation>√d_k</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="162"/>
        <source>The diagnostic that colours the grid</source>
        <translation>为网格着色的诊断量</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="163"/>
        <source>The logits diagnosed: the file&apos;s own scale c (meta.scale, default 1/√d_k), or a scaling rule re-applied to the same q and k</source>
        <translation>被诊断的 logit：文件自身的缩放 c（meta.scale，默认 1/√d_k），或在同一组 q、k 上重新应用的缩放规则</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="166"/>
        <source>Temperature T of the rule 1/T</source>
        <translation>规则 1/T 的温度 T</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="167"/>
        <source>QK-norm gain g (√d_k: the default)</source>
        <translation>QK-norm 增益 g（√d_k：默认值）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="168"/>
        <source>Soft-cap value: cap·tanh(c·q·k/cap)</source>
        <translation>软上限值：cap·tanh(c·q·k/cap)</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="169"/>
        <source>Batch entry whose attention weights the replay shows (the diagnostics average over all entries)</source>
        <translation>重放显示其注意力权重的批次条目（诊断量对所有条目取平均）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/table_view.py" line="98"/>
        <source>Click a head to replay it under every rule and show it in the explorer&apos;s views; click a header to sort, right-click one to hide or show columns</source>
        <translation>点击一个头，在每种规则下重放它并在探索器的视图中显示；点击表头排序，右键点击表头隐藏或显示列</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="132"/>
        <source>Click a rule&apos;s map to open it in the explorer (that head, that rule)</source>
        <translation>点击某个规则的图，在探索器中打开（该头、该规则）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="172"/>
        <source>Replay rules</source>
        <translation>重放规则</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="173"/>
        <source>The rules whose attention maps are shown for the selected head (every rule is replayed and exported to CSV)</source>
        <translation>为所选头显示注意力图的规则（每种规则都会重放并导出到 CSV）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="180"/>
        <source>file&apos;s own scale</source>
        <translation>文件自身的缩放</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="134"/>
        <source>Grid letters: S saturated, P sharp, K sink, U near-uniform (a dot where a cell is too small for letters).</source>
        <translation>网格字母：S 饱和，P 尖锐，K 汇聚，U 近均匀（格子太小放不下字母时显示一个点）。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="261"/>
        <source>Logits reset to the file&apos;s own scale (were {0}) for the new file.</source>
        <translation>新文件的 logits 已重置为文件自身的缩放（之前为 {0}）。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/table_view.py" line="123"/>
        <source>Default columns</source>
        <translation>默认列</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="287"/>
        <source>The explorer needs q and k; this file holds attention weights only, so its replay stays in this tab.</source>
        <translation>探索器需要 q 和 k；此文件只有注意力权重，所以它的重放留在本页。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="318"/>
        <source>The file has no layer {0} head {1} batch entry {2}.</source>
        <translation>文件中没有第 {0} 层第 {1} 头批次条目 {2}。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="325"/>
        <source>No tensor file open. File › Open model… (Ctrl+M) runs a Hugging Face model folder or a GGUF file on your text; File › Open tensors… (Ctrl+Shift+O) opens a .npz, .safetensors or .npy file (or a folder of .npy files). Both can be dropped on the window; Help › Open sample tensors and Open sample model have examples.</source>
        <translation>未打开张量文件。文件 › 打开模型…（Ctrl+M）在你的文本上运行 Hugging Face 模型文件夹或 GGUF 文件；文件 › 打开张量…（Ctrl+Shift+O）打开 .npz、.safetensors 或 .npy 文件（或 .npy 文件的文件夹）。两者都可以拖放到窗口上；帮助 › 打开示例张量 和 打开示例模型 提供了例子。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="345"/>
        <source>Click a head to replay it under every scaling rule.</source>
        <translation>点击一个头，在每种缩放规则下重放它。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/controls.py" line="144"/>
        <source>{0}/{1} heads</source>
        <translation>{0}/{1} 个头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/view.py" line="365"/>
        <source>Error: {0}</source>
        <translation>错误：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="29"/>
        <source>needs d_k (meta &quot;d_k&quot;)</source>
        <translation>需要 d_k（meta &quot;d_k&quot;）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="31"/>
        <source>needs a scale &gt; 0</source>
        <translation>需要大于 0 的缩放</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="32"/>
        <source>needs q and k</source>
        <translation>需要 q 和 k</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="53"/>
        <source>the app&apos;s mini-trainer: one attention layer (no residual, no MLP), heads: {0}, d_k {1}, d_model {2}, task: {3}</source>
        <translation>本程序的迷你训练器：单个注意力层（无 residual、无 MLP），头数 {0}，d_k {1}，d_model {2}，任务：{3}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="68"/>
        <source>{0} layers × {1} heads, n = {2}, batch {3}, {4}</source>
        <translation>{0} 层 × {1} 头，n = {2}，批次 {3}，{4}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="70"/>
        <source>logits only (no q and k)</source>
        <translation>只有 logits（无 q 和 k）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="71"/>
        <source>attention weights only (no q and k)</source>
        <translation>只有注意力权重（无 q 和 k）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="73"/>
        <source>{0} layers × {1} heads, n = {2}, d_k = {3}, batch {4}, {5}</source>
        <translation>{0} 层 × {1} 头，n = {2}，d_k = {3}，批次 {4}，{5}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="77"/>
        <source>grouped-query: {0} key heads</source>
        <translation>分组查询：{0} 个键头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="79"/>
        <source>TransformerLens cache</source>
        <translation>TransformerLens 缓存</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="80"/>
        <source>causal</source>
        <translation>因果</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="81"/>
        <source>not causal</source>
        <translation>非因果</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="86"/>
        <source>captured, not saved (File › Save captured tensors…)</source>
        <translation>已捕获，未保存（文件 › 保存捕获的张量…）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="107"/>
        <source>{0}, … ({1} in all)</source>
        <translation>{0}, …（{1} 层）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="108"/>
        <source>sliding window of {0} keys on layers {1}</source>
        <translation>第 {1} 层只看最近 {0} 个键</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="126"/>
        <source>Flagged heads: none.</source>
        <translation>被标记的头：没有。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="127"/>
        <source>Flagged heads: none so far.</source>
        <translation>被标记的头：目前没有。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="131"/>
        <source>Flagged heads ({0}): {1}</source>
        <translation>被标记的头（{0}）：{1}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="133"/>
        <source>and {0} more (sort the flags column).</source>
        <translation>另有 {0} 个（按标记列排序查看）。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="149"/>
        <source>logits: the file&apos;s own scale</source>
        <translation>logits：文件自身的缩放</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="150"/>
        <source>logits: {0} re-applied</source>
        <translation>logits：重新应用 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="157"/>
        <source>No tensor file open.</source>
        <translation>未打开张量文件。</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="160"/>
        <source>replay: layer {0}, head {1}, batch entry {2}</source>
        <translation>重放：第 {0} 层，头 {1}，批次条目 {2}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="169"/>
        <source>Opening {0}…</source>
        <translation>正在打开 {0}…</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="173"/>
        <source>No tensor file open</source>
        <translation>未打开张量文件</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="176"/>
        <source>{0}: diagnosing, {1}/{2} heads</source>
        <translation>{0}：正在诊断，{1}/{2} 个头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="179"/>
        <source>{0}: replaying the selected head</source>
        <translation>{0}：正在重放所选的头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="181"/>
        <source>{0}: stopped after {1}/{2} heads</source>
        <translation>{0}：在 {1}/{2} 个头后停止</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="183"/>
        <source>{0}: {1} heads diagnosed</source>
        <translation>{0}：已诊断 {1} 个头</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="185"/>
        <source>replayed layer {0}, head {1}</source>
        <translation>已重放第 {0} 层，头 {1}</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="193"/>
        <source>Layer {0}, head {1}, batch entry {2}: the rules that multiply the logits, replayed exactly from the file&apos;s weights (colour: weight p from 0 to 1)</source>
        <translation>第 {0} 层第 {1} 头，批次条目 {2}：乘以 logits 的各规则，由文件中的权重精确重放（颜色：权重 p，0 到 1）</translation>
    </message>
    <message>
        <location filename="../../gui/heads/texts.py" line="197"/>
        <source>Layer {0}, head {1}, batch entry {2}: every rule on the same real q and k (colour: weight p from 0 to 1, as in the explorer)</source>
        <translation>第 {0} 层第 {1} 头，批次条目 {2}：同一组真实 q、k 上的每种规则（颜色：权重 p，0 到 1，与探索器相同）</translation>
    </message>
</context>
<context>
    <name>HeatmapView</name>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="115"/>
        <source>Attention weights</source>
        <extracomment>More heads than this would make every panel a few pixels wide; the rest are listed as hidden. Least height (px) of a panel, title and axis included, in a grid of more than three rows. The colour scale and map selectors.</extracomment>
        <translation>注意力权重</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="110"/>
        <source>Colour scale:</source>
        <translation>颜色刻度：</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="67"/>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="111"/>
        <source>log₁₀ p</source>
        <extracomment>The log scale spans [log₁₀(1/n) − this, 0]: a uniform row (p = 1/n) sits in the upper half of the bar, weights 100× below uniform and less share the darkest colour. RGBA of a masked cell of a real head (its weight is 0 because the key is masked, not because attention chose 0). The colour maps offered (pyqtgraph names), both perceptually uniform. log₁₀ p on [log₁₀(1/n) − 2, 0], shared by every map p on [0, 1], shared by every map p ÷ the largest p of its own map, on [0, 1]</extracomment>
        <translation>log₁₀ p</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="112"/>
        <source>linear p</source>
        <translation>线性 p</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="113"/>
        <source>p ÷ largest p of each map</source>
        <translation>p ÷ 每张图的最大 p</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="114"/>
        <source>log₁₀ p shows how spread a row is at any n; linear p shows only weights near 1; per map stretches each map to its own largest weight</source>
        <translation>log₁₀ p 在任何 n 下都能看出一行有多分散；线性 p 只显出接近 1 的权重；按图则把每张图按它自己的最大权重放大</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="117"/>
        <source>Colours:</source>
        <translation>配色：</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="119"/>
        <source>cividis (colour-blind safe)</source>
        <translation>cividis（适合看不清红绿的人）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="120"/>
        <source>Both maps are perceptually uniform; cividis also reads the same under red–green colour-vision deficiency</source>
        <translation>两种配色看起来都是均匀变化的；看不清红绿的人用 cividis 仍可读出同样的数值</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="69"/>
        <source>p ÷ largest p of its map</source>
        <translation>p ÷ 本图最大 p</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="309"/>
        <source>key j</source>
        <translation>键 j</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="309"/>
        <source>query i</source>
        <translation>查询 i</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="324"/>
        <source>head {0}</source>
        <translation>头 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="336"/>
        <source>Pairs: {0} | {1}. Rows: query i, columns: key j. Outlined: query row {2}.</source>
        <translation>成对显示：{0} | {1}。行：查询 i，列：键 j。框出：查询行 {2}。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="342"/>
        <source>Grey: masked keys (the model&apos;s mask).</source>
        <translation>填充格：被掩码的键（模型自身的掩码）。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="347"/>
        <source>Heads not shown: {0}.</source>
        <translation>未显示的头：{0} 个。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="77"/>
        <source>Colour: log₁₀ p of the softmax weight p; a uniform row is at log₁₀(1/n) = {0}; weights 100× below uniform (p ≤ {1}) share the darkest colour.</source>
        <translation>颜色：softmax 权重 p 的 log₁₀ p；均匀的一行位于 log₁₀(1/n) = {0}；比均匀值低 100 倍的权重（p ≤ {1}）都用色标最低一端的颜色。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="83"/>
        <source>Colour: softmax weight p ÷ the largest p of its own map.</source>
        <translation>颜色：softmax 权重 p ÷ 本图自己的最大 p。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap_colours.py" line="84"/>
        <source>Colour: p = softmax weight.</source>
        <translation>颜色：p = softmax 权重。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="358"/>
        <source>Hover over a cell to read head, i, j, logit, p.</source>
        <translation>将鼠标悬停在单元格上可读取头、i、j、logit 和 p。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="385"/>
        <source>masked</source>
        <translation>已掩码</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/heatmap.py" line="386"/>
        <source>{0}: head {1}, query i = {2}, key j = {3}, logit = {4}, p = {5}</source>
        <translation>{0}：头 {1}，查询 i = {2}，键 j = {3}，logit = {4}，p = {5}</translation>
    </message>
</context>
<context>
    <name>HistogramView</name>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="32"/>
        <source>n/a</source>
        <translation>不适用</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="33"/>
        <source>{0}: Var empirical = {1}, theory = {2}</source>
        <translation>{0}：经验方差 Var = {1}，理论值 = {2}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="40"/>
        <source>{0}: mean = {1}, Var = {2} (empirical)</source>
        <translation>{0}：均值 = {1}，方差 = {2}（经验值）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="98"/>
        <source>Logit histogram</source>
        <translation>Logit 直方图</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="102"/>
        <source>Common logit axis</source>
        <translation>统一 logit 坐标轴</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="104"/>
        <source>Show both rules on one logit scale to compare their spread</source>
        <translation>在同一 logit 刻度上显示两种规则，以比较其分布宽度</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="109"/>
        <source>logit s = c·q·k</source>
        <translation>logit s = c·q·k</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="110"/>
        <source>probability density</source>
        <translation>概率密度</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="128"/>
        <source>Dashed: the Gaussian of the same mean and variance as the head&apos;s logits (every unmasked pair), for comparison only: real q and k follow no variance law.</source>
        <translation>虚线：与此头 logit（所有未掩码的对）均值和方差相同的高斯分布，只用于比较：真实的 q 和 k 不符合任何方差定律。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="134"/>
        <source>Dashed: Gaussian N(0, Var&lt;sub&gt;theory&lt;/sub&gt;), Var&lt;sub&gt;theory&lt;/sub&gt; = d&lt;sub&gt;k&lt;/sub&gt;·σ&lt;sub&gt;q&lt;/sub&gt;²·σ&lt;sub&gt;k&lt;/sub&gt;²·c² for independent tokens; both variances are over pairs i ≠ j.</source>
        <translation>虚线：高斯分布 N(0, Var&lt;sub&gt;theory&lt;/sub&gt;)，对相互独立的词元，Var&lt;sub&gt;theory&lt;/sub&gt; = d&lt;sub&gt;k&lt;/sub&gt;·σ&lt;sub&gt;q&lt;/sub&gt;²·σ&lt;sub&gt;k&lt;/sub&gt;²·c²；两种方差均在 i ≠ j 的配对上计算。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="141"/>
        <source>With ρ ≠ 0, key i is correlated with query i: those diagonal logits (mean c·ρ·d&lt;sub&gt;k&lt;/sub&gt;) form the extra tail (right for ρ &gt; 0, left for ρ &amp;lt; 0).</source>
        <translation>ρ ≠ 0 时，键 i 与查询 i 相关：这些对角线 logit（均值 c·ρ·d&lt;sub&gt;k&lt;/sub&gt;）形成额外的尾部（ρ &gt; 0 时在右侧，ρ &amp;lt; 0 时在左侧）。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="194"/>
        <source>−cap</source>
        <translation>−上限</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="195"/>
        <source>+cap</source>
        <translation>+上限</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/histogram.py" line="206"/>
        <source>|s| &amp;lt; cap = {0}</source>
        <translation>|s| &amp;lt; 上限 = {0}</translation>
    </message>
</context>
<context>
    <name>LawsView</name>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="110"/>
        <source>Scaling laws</source>
        <extracomment>(SweepPoint field, log y) per panel, in layout order.</extracomment>
        <translation>缩放规律</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="115"/>
        <source>Logit variance</source>
        <translation>Logit 方差</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="115"/>
        <source>Var(s)</source>
        <translation>方差 Var(s)</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="117"/>
        <source>Mean row entropy</source>
        <translation>行平均熵</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="118"/>
        <source>H (nats)</source>
        <translation>H（奈特）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="120"/>
        <source>Mean largest weight</source>
        <translation>平均最大权重</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="122"/>
        <source>Saturated rows</source>
        <translation>饱和行</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="123"/>
        <source>share with p&lt;sub&gt;max&lt;/sub&gt; &gt; 0.99</source>
        <translation>p&lt;sub&gt;max&lt;/sub&gt; &gt; 0.99 的比例</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="164"/>
        <source>  Sweep running: {0} of {1} points.</source>
        <translation>  扫描进行中：已完成 {0} / {1} 个点。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="165"/>
        <source>Markers: Monte Carlo (n = {0}); dashed: closed-form variance (d&lt;sub&gt;k&lt;/sub&gt;·σ&lt;sub&gt;q&lt;/sub&gt;²σ&lt;sub&gt;k&lt;/sub&gt;²·c² at ρ = 0). Dotted line: current d&lt;sub&gt;k&lt;/sub&gt; = {1}.</source>
        <translation>标记：蒙特卡洛（n = {0}）；虚线：闭式方差（ρ = 0 时为 d&lt;sub&gt;k&lt;/sub&gt;·σ&lt;sub&gt;q&lt;/sub&gt;²σ&lt;sub&gt;k&lt;/sub&gt;²·c²）。点线：当前 d&lt;sub&gt;k&lt;/sub&gt; = {1}。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/laws.py" line="235"/>
        <source>theory</source>
        <translation>理论值</translation>
    </message>
</context>
<context>
    <name>LengthView</name>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="86"/>
        <source>Length</source>
        <extracomment>Colours of the toy&apos;s two curves (the rules they stand for: 1/√d_k&apos;s blue, SSMax&apos;s wine). SweepPoint field per panel, in layout order (the toy is the fourth panel). Half-width of the error bars in standard errors (a 95 % interval).</extracomment>
        <translation>长度</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="91"/>
        <source>Mean row entropy</source>
        <translation>行平均熵</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="92"/>
        <source>H (nats)</source>
        <translation>H（奈特）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="93"/>
        <source>Mean largest weight</source>
        <translation>平均最大权重</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="94"/>
        <source>Entropy / ln n (1 = uniform)</source>
        <translation>熵 / ln n（1 为均匀）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="96"/>
        <source>SSMax toy: logits −2, one +3</source>
        <translation>SSMax 示例：logit 均为 −2，一个为 +3</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="97"/>
        <source>weight of the +3 logit</source>
        <translation>+3 logit 的权重</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="104"/>
        <source>iid rows of n Gaussian logits at the current d_k: with a fixed scale (1/√d_k, YaRN) the softmax disperses as n grows (p_max → 0, entropy → ln n); ln n/√d_k and SSMax s·ln n/√d_k keep it focused. Toy (Nakanishi 2025, Fig. 1): softmax&apos;s e³/(e³ + (n−1)e⁻²) → 0, SSMax&apos;s 1/(1 + (n−1)·n^(−5s)) → 1.</source>
        <translation>当前 d_k 下由 n 个独立同分布高斯 logit 组成的行：缩放固定时（1/√d_k、YaRN），softmax 随 n 增大而分散（p_max → 0，熵 → ln n）；ln n/√d_k 与 SSMax s·ln n/√d_k 使其保持集中。示例（Nakanishi 2025，图 1）：softmax 的 e³/(e³ + (n−1)e⁻²) → 0，SSMax 的 1/(1 + (n−1)·n^(−5s)) → 1。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="142"/>
        <source>Lines: Monte Carlo means over iid rows (d&lt;sub&gt;k&lt;/sub&gt; = {0}, up to {1} rows per point, fewer at large n), bars: 95 % intervals (±1.96 standard errors). SSMax s = {2}, YaRN f = {3}.</source>
        <translation>曲线：独立同分布行的蒙特卡洛均值（d&lt;sub&gt;k&lt;/sub&gt; = {0}，每点最多 {1} 行，n 大时行数下降），误差棒：95 % 区间（±1.96 个标准误）。SSMax s = {2}，YaRN f = {3}。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/length.py" line="148"/>
        <source>  Sweep running: {0} of {1} points.</source>
        <translation>  扫描进行中：已完成 {0} / {1} 个点。</translation>
    </message>
</context>
<context>
    <name>LrSweepView</name>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="124"/>
        <source>final held-out loss (nats)</source>
        <translation>最终留出集损失（奈特）</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="125"/>
        <source>learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="127"/>
        <source>stable threshold</source>
        <translation>稳定阈值</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="116"/>
        <source>Learning-rate sweep</source>
        <translation>学习率扫描</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="123"/>
        <source>Final held-out loss&lt;br&gt;against learning rate</source>
        <translation>最终留出集损失&lt;br&gt;与学习率的关系</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="207"/>
        <source>Run a learning-rate sweep (Ctrl+L) to see how far each rule&apos;s learning rate can be pushed.</source>
        <translation>运行学习率扫描（Ctrl+L），查看每种规则的学习率最多能调到多大。</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="214"/>
        <source>Sweep running: {0} of {1} runs done (learning rate {2:g}, seed {3}).</source>
        <translation>扫描进行中：已完成 {0} / {1} 次运行（学习率 {2:g}，种子 {3}）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="221"/>
        <source>no stable lr</source>
        <translation>无稳定学习率</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="222"/>
        <source>Largest stable learning rate (d&lt;sub&gt;k&lt;/sub&gt; = {0}, {1} seeds, {2} steps): {3}. Band: min…max over seeds; ×: a seed diverged.</source>
        <translation>最大稳定学习率（d&lt;sub&gt;k&lt;/sub&gt; = {0}，{1} 个种子，{2} 步）：{3}。色带：各种子的最小值…最大值；×：有种子发散。</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="237"/>
        <source>largest stable lr</source>
        <translation>最大稳定学习率</translation>
    </message>
    <message>
        <location filename="../../gui/train/lr_sweep_view.py" line="238"/>
        <source>diverged</source>
        <translation>发散</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../../gui/window_files.py" line="34"/>
        <source>Image size</source>
        <translation>图像尺寸</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="42"/>
        <source>Width</source>
        <translation>宽度</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="43"/>
        <source>Height</source>
        <translation>高度</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="156"/>
        <source>Explorer</source>
        <translation>探索</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="157"/>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="162"/>
        <source>Heads</source>
        <translation>注意力头</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="166"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="219"/>
        <source>Parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="109"/>
        <source>sweep %v/%m</source>
        <extracomment>The tab whose state the bar shows while it is in front (the others: set_tab_text).</extracomment>
        <translation>扫描 %v/%m</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="110"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="111"/>
        <source>Stop the running computation (Esc)</source>
        <translation>停止正在进行的计算（Esc）</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="71"/>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="110"/>
        <source>PNG, SVG, PDF and CSV of every view plus the session, into one folder</source>
        <translation>每个视图的 PNG、SVG、PDF 和 CSV 以及会话，写入同一文件夹</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="77"/>
        <source>&amp;Open session…</source>
        <translation>打开会话(&amp;O)…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="79"/>
        <source>&amp;Save session</source>
        <translation>保存会话(&amp;S)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="81"/>
        <source>Save session &amp;as…</source>
        <translation>会话另存为(&amp;A)…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="84"/>
        <source>Open &amp;tensors…</source>
        <translation>打开张量(&amp;T)…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="86"/>
        <source>Open a model&apos;s q and k (.npz, .safetensors) and diagnose every head</source>
        <translation>打开模型的 q 和 k（.npz、.safetensors）并诊断每个头</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="89"/>
        <source>Open &amp;model…</source>
        <translation>打开模型(&amp;M)…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="91"/>
        <source>Run a Hugging Face model folder or a GGUF file on a text and diagnose every head (no PyTorch needed)</source>
        <translation>在一段文本上运行 Hugging Face 模型文件夹或 GGUF 文件，并诊断每个头（不需要 PyTorch）</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="94"/>
        <source>Save capt&amp;ured tensors…</source>
        <translation>保存捕获的张量(&amp;U)…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="96"/>
        <source>Write the q and k captured from a model as .npz or .safetensors</source>
        <translation>把从模型捕获的 q 和 k 写成 .npz 或 .safetensors</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="100"/>
        <source>Export current view as &amp;PNG…</source>
        <translation>将当前视图导出为 &amp;PNG…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="102"/>
        <source>Export current view as S&amp;VG…</source>
        <translation>将当前视图导出为 S&amp;VG…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="104"/>
        <source>Export current view as P&amp;DF…</source>
        <translation>将当前视图导出为 P&amp;DF…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="106"/>
        <source>A one-page vector PDF of the view in front, for papers</source>
        <translation>当前视图的单页 PDF（可无损缩放），适合论文</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="108"/>
        <source>Export &amp;all…</source>
        <translation>全部导出(&amp;A)…</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="113"/>
        <source>&amp;Copy current plot</source>
        <translation>复制当前图表(&amp;C)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="116"/>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="122"/>
        <source>&amp;Reset view</source>
        <translation>重置视图(&amp;R)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="124"/>
        <source>Show current view &amp;side by side</source>
        <translation>并排显示当前视图(&amp;S)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="126"/>
        <source>&amp;Cancel computation</source>
        <translation>取消计算(&amp;C)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="133"/>
        <source>Back to &amp;random q, k</source>
        <translation>回到随机 q, k(&amp;R)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="135"/>
        <source>The Explorer shows a real head (picked in the Heads tab): show q and k drawn from the parameters again</source>
        <translation>探索页正显示一个真实的头（在注意力头页中选择）：重新显示按参数随机抽取的 q 和 k</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="150"/>
        <source>Open &amp;sample tensors</source>
        <translation>打开示例张量(&amp;S)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="152"/>
        <source>Heads of the mini-trainer&apos;s models, shipped with the program</source>
        <translation>随程序附带的迷你训练器模型的注意力头</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="154"/>
        <source>&amp;About</source>
        <translation>关于(&amp;A)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="72"/>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="224"/>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="73"/>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="118"/>
        <location filename="../../gui/window_status.py" line="153"/>
        <location filename="../../gui/window_status.py" line="160"/>
        <source>Computing…</source>
        <translation>正在计算…</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="122"/>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="125"/>
        <source>Cannot open session</source>
        <translation>无法打开会话</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="130"/>
        <source>Opened {0}</source>
        <translation>已打开 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="138"/>
        <source>Cannot save session</source>
        <translation>无法保存会话</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="142"/>
        <source>Saved {0}</source>
        <translation>已保存 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="179"/>
        <source>Open session</source>
        <translation>打开会话</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="181"/>
        <source>Session files (*.json);;All files (*)</source>
        <translation>会话文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="197"/>
        <source>Save session</source>
        <translation>保存会话</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="199"/>
        <source>Session files (*.json)</source>
        <translation>会话文件 (*.json)</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="216"/>
        <source>PDF documents (*.pdf)</source>
        <translation>PDF 文档 (*.pdf)</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="270"/>
        <source>Export view</source>
        <translation>导出视图</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="233"/>
        <location filename="../../gui/window_files.py" line="276"/>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="280"/>
        <source>Exported {0}</source>
        <translation>已导出 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="206"/>
        <source>PNG images (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="211"/>
        <source>SVG images (*.svg)</source>
        <translation>SVG 图像 (*.svg)</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="226"/>
        <source>Export all views into folder</source>
        <translation>将所有视图导出到文件夹</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="237"/>
        <source>Exported {0} files to {1}</source>
        <translation>已将 {0} 个文件导出到 {1}</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="249"/>
        <source>Copied {0} to the clipboard</source>
        <translation>已将“{0}”复制到剪贴板</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="138"/>
        <source>Cancelled; showing the results computed so far</source>
        <translation>已取消；显示目前已算出的结果</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="342"/>
        <source>About Attention Scale Explorer</source>
        <translation>关于注意力缩放探索器</translation>
    </message>
    <message>
        <location filename="../../gui/main_window.py" line="343"/>
        <source>Attention Scale Explorer

See and test why scaled dot-product attention divides the logits by √d_k: raw scores q·k have variance d_k·σ⁴, which saturates the softmax and kills its gradients as d_k grows.</source>
        <translation>注意力缩放探索器

观察并验证缩放点积注意力为何要将 logit 除以 √d_k：原始分数 q·k 的方差为 d_k·σ⁴，随着 d_k 增大，它会使 softmax 饱和并让梯度消失。</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="124"/>
        <location filename="../../gui/window_status.py" line="166"/>
        <source>Error: {0}</source>
        <translation>错误：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_status.py" line="174"/>
        <source>n = {0}, d_k = {1}, h = {2}, rule {3}</source>
        <translation>n = {0}，d_k = {1}，h = {2}，规则 {3}</translation>
    </message>
    <message>
        <location filename="../../gui/window_files.py" line="91"/>
        <source>Attention Scale Explorer</source>
        <translation>注意力缩放探索器</translation>
    </message>
    <message>
        <location filename="../../gui/window_close.py" line="102"/>
        <source>Closing: waiting for the current computation step to end…</source>
        <extracomment>How long closing the window waits for the workers before it closes asynchronously.</extracomment>
        <translation>正在关闭：当前计算步结束后关闭…</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="34"/>
        <source>{0} ({1}, {2} layers × {3} heads)</source>
        <translation>{0}（{1}，{2} 层 × {3} 个头）</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="84"/>
        <source>Open tensors</source>
        <translation>打开张量</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="85"/>
        <source>Tensor files (*.npz *.safetensors *.npy);;All files (*)</source>
        <translation>张量文件 (*.npz *.safetensors *.npy);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="149"/>
        <source>Open sample &amp;model</source>
        <translation>打开示例模型(&amp;M)</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="150"/>
        <source>Real models installed as Python packages: capture their heads</source>
        <translation>以 Python 包安装的真实模型：捕获它们的头</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="165"/>
        <source>Save captured tensors</source>
        <translation>保存捕获的张量</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="166"/>
        <source>NumPy archive (*.npz);;safetensors (*.safetensors)</source>
        <translation>NumPy 归档 (*.npz);;safetensors (*.safetensors)</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="179"/>
        <source>Saving the captured tensors to {0}…</source>
        <translation>正在把捕获的张量保存到 {0}…</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="187"/>
        <source>Captured tensors saved to {0}</source>
        <translation>捕获的张量已保存到 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="198"/>
        <source>Not saved</source>
        <translation>未保存</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="199"/>
        <source>The captured tensors were not saved to {0}: {1}. The capture is still open.</source>
        <translation>捕获的张量未能保存到 {0}：{1}。捕获结果仍然打开着。</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="222"/>
        <source>Tensor file not found</source>
        <translation>找不到张量文件</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="223"/>
        <source>The session&apos;s tensor file {0} was not found (moved or deleted?). The rest of the session is open; open the file again with File › Open tensors…</source>
        <translation>未找到会话的张量文件 {0}（已移动或删除？）。会话的其余部分已打开；请用 文件 › 打开张量… 重新打开该文件。</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="254"/>
        <source>Tensor file problem</source>
        <translation>张量文件问题</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="282"/>
        <source>Model problem</source>
        <translation>模型问题</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="304"/>
        <source>{0} ({1} MB): {2}</source>
        <translation>{0}（{1} MB）：{2}</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="308"/>
        <source>{0} — not installed…</source>
        <translation>{0} — 未安装…</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="310"/>
        <source>Not installed; install with: {0}</source>
        <translation>未安装；安装命令：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="317"/>
        <source>Sample model not installed</source>
        <translation>示例模型未安装</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="318"/>
        <source>{0} is not installed. Install it ({1} MB) into the Python environment the app runs in, then choose it again from Help › Open sample model:</source>
        <translation>{0} 未安装。请把它（{1} MB）安装到运行本程序的 Python 环境中，然后再从 帮助 › 打开示例模型 中选择它：</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="323"/>
        <source>Copy command</source>
        <translation>复制命令</translation>
    </message>
    <message>
        <location filename="../../gui/window_heads.py" line="370"/>
        <source>The Explorer now shows {0} (n = {1}); View › Back to random q, k returns to the parameters</source>
        <translation>探索页现在显示 {0}（n = {1}）；视图 › 回到随机 q, k 可回到参数</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="128"/>
        <source>&amp;Presentation</source>
        <translation>投影模式(&amp;P)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="130"/>
        <source>The view in front fills the window with 1.6× larger text and lines, for a projector; Esc or F11 returns</source>
        <translation>当前视图占满窗口，文字和线条放大 1.6 倍，适合投影；按 Esc 或 F11 退出</translation>
    </message>
    <message>
        <location filename="../../gui/kit/pins.py" line="156"/>
        <source>A view holds at most {0} pins: clear them first.</source>
        <extracomment>Pins per view: more faded copies make a plot unreadable. Points per pinned curve kept (a session file stays small).</extracomment>
        <translation>一个视图最多保留 {0} 个固定曲线：请先清除。</translation>
    </message>
    <message>
        <location filename="../../gui/kit/pins.py" line="183"/>
        <source>{0} pin {1}: {2}</source>
        <translation>{0} 固定 {1}：{2}</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="138"/>
        <source>&amp;Pin curves</source>
        <translation>固定曲线(&amp;P)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="140"/>
        <source>Keep the current curves of this view as a faded reference; the live curves draw over them when a parameter changes</source>
        <translation>把此视图当前的曲线留作淡色的对比线；参数改变时，实时曲线显示在它们上面</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="143"/>
        <source>C&amp;lear pins</source>
        <translation>清除固定曲线(&amp;L)</translation>
    </message>
    <message>
        <location filename="../../gui/actions.py" line="145"/>
        <source>Remove this view&apos;s pinned curves</source>
        <translation>移除此视图的固定曲线</translation>
    </message>
    <message>
        <location filename="../../gui/window_pins.py" line="39"/>
        <source>This tab has no curves to pin.</source>
        <translation>此标签页没有可固定的曲线。</translation>
    </message>
    <message>
        <location filename="../../gui/window_pins.py" line="43"/>
        <source>{0} draws no curves to pin.</source>
        <translation>{0} 没有可固定的曲线。</translation>
    </message>
    <message>
        <location filename="../../gui/window_pins.py" line="51"/>
        <source>Pinned: {0}</source>
        <translation>已固定：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/window_pins.py" line="74"/>
        <source>training run</source>
        <translation>训练运行</translation>
    </message>
    <message>
        <location filename="../../gui/window_pins.py" line="75"/>
        <source>d_k = {0}, n = {1}, lr {2:g}, batch {3}, {4} steps</source>
        <translation>d_k = {0}，n = {1}，学习率 {2:g}，批大小 {3}，{4} 步</translation>
    </message>
    <message>
        <location filename="../../gui/window_pins.py" line="78"/>
        <source>n = {0}, d_k = {1}, σ = {2:g}, ρ = {3:g}, rule {4}</source>
        <translation>n = {0}，d_k = {1}，σ = {2:g}，ρ = {3:g}，规则 {4}</translation>
    </message>
</context>
<context>
    <name>ModelView</name>
    <message>
        <location filename="../../gui/model/controls.py" line="211"/>
        <source>choose a model folder or GGUF file first</source>
        <extracomment>The parameter each rule takes from the parameter box (the rules without one are absent).</extracomment>
        <translation>请先选择模型文件夹或 GGUF 文件</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="245"/>
        <source>{0}/{1} steps</source>
        <translation>{0}/{1} 步</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="258"/>
        <source>No sample model is installed: {0}</source>
        <translation>未安装示例模型：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="266"/>
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="266"/>
        <source>Text:</source>
        <translation>文本：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="267"/>
        <source>Max tokens:</source>
        <translation>最多词元：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="268"/>
        <source>Memory limit:</source>
        <translation>内存上限：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="269"/>
        <source>α grid (log-spaced, α = 1 always in):</source>
        <translation>α 网格（对数间隔，始终包含 α = 1）：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="270"/>
        <source>to</source>
        <translation>到</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="270"/>
        <source>points</source>
        <translation>点数</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="271"/>
        <source>Apply to:</source>
        <translation>作用于：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="272"/>
        <source>Layers:</source>
        <translation>层：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="272"/>
        <source>Layer:</source>
        <translation>层：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="273"/>
        <source>Heads:</source>
        <translation>头：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="273"/>
        <source>Scale:</source>
        <translation>缩放：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="274"/>
        <source>Parameter:</source>
        <translation>参数：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="275"/>
        <source>Precision:</source>
        <translation>精度：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="276"/>
        <source>Softmax:</source>
        <translation>Softmax：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="277"/>
        <source>α per layer:</source>
        <translation>逐层 α：</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="284"/>
        <source>Sample</source>
        <translation>示例</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="285"/>
        <source>Use the installed sample model (SmolLM2-135M); names the pip command when none is installed</source>
        <translation>使用已安装的示例模型（SmolLM2-135M）；未安装时给出 pip 命令</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="288"/>
        <source>The text whose next-token loss is measured (tokenized with the model&apos;s own tokenizer)</source>
        <translation>测量其下一词元损失的文本（用模型自己的分词器切分）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="290"/>
        <source>A longer text is cut to its first tokens</source>
        <translation>更长的文本只取其前面的词元</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="292"/>
        <source>The most memory one forward may allocate; a longer text is refused with the numbers</source>
        <translation>一次前向计算最多可分配的内存；超出时不运行，并给出数字</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="295"/>
        <source>α multiplies every attention logit of the chosen layers and heads; α = 1 is the model itself, α = √d_k undoes its 1/√d_k</source>
        <translation>α 乘以所选层和头的每个注意力 logit；α = 1 即模型本身，α = √d_k 抵消其 1/√d_k</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="298"/>
        <location filename="../../gui/model/texts.py" line="39"/>
        <source>all layers</source>
        <translation>所有层</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="299"/>
        <source>layers</source>
        <translation>选定的层</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="300"/>
        <source>heads of one layer</source>
        <translation>一层中的头</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="302"/>
        <source>Where α (and the scale, the precision) applies</source>
        <translation>α（以及缩放、精度）作用的位置</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="304"/>
        <source>e.g. 0,2,5-7</source>
        <translation>例如 0,2,5-7</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="305"/>
        <source>all (or e.g. 0,3)</source>
        <translation>全部（或例如 0,3）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="306"/>
        <source>model&apos;s own</source>
        <translation>模型自身</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="309"/>
        <source>Keep the model&apos;s own scale c, or replace it by an explorer rule (α multiplies either)</source>
        <translation>保留模型自身的缩放 c，或换成探索器的规则（α 与两者相乘）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="312"/>
        <source>The rule&apos;s parameter: T, gain g, cap, SSMax s or YaRN f</source>
        <translation>规则的参数：T、增益 g、上限 cap、SSMax s 或 YaRN f</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="314"/>
        <source>Round the attention logits and softmax to this format (float32: no rounding)</source>
        <translation>把注意力 logit 和 softmax 舍入到此格式（float32：不舍入）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="316"/>
        <source>stable (max subtracted)</source>
        <translation>稳定（减去最大值）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="317"/>
        <source>naive exp(z)</source>
        <translation>直接 exp(z)（不减最大值）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="320"/>
        <source>How the rounded softmax is taken</source>
        <translation>舍入后的 softmax 如何计算</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="321"/>
        <source>√d_k (no scaling)</source>
        <translation>√d_k（不缩放）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="322"/>
        <source>The α applied to one layer (or head) at a time for the per-layer curve</source>
        <translation>逐层曲线中每次只作用于一层（或一个头）的 α</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="325"/>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="326"/>
        <source>Score the text under every α of the grid, then each layer in turn, then continue it (Ctrl+Enter)</source>
        <translation>在网格的每个 α 下为文本打分，再逐层进行，然后续写文本（Ctrl+Enter）</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="329"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../../gui/model/controls.py" line="330"/>
        <source>Stop; the points computed so far stay (Esc)</source>
        <translation>停止；已算出的点保留（Esc）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="117"/>
        <source>Loss against α</source>
        <extracomment>The intervention&apos;s colour and marker: those of the rule without scaling.</extracomment>
        <translation>损失随 α 的变化</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="118"/>
        <source>loss (nats per token)</source>
        <translation>损失（每词元 nat）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="119"/>
        <source>α (× every attention logit)</source>
        <translation>α（× 每个注意力 logit）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="123"/>
        <source>loss (nats)</source>
        <translation>损失（nat）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="121"/>
        <source>α on one head</source>
        <translation>只改一个头的 α</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="122"/>
        <source>α on one layer</source>
        <translation>只改一层的 α</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="125"/>
        <source>Attention entropy</source>
        <translation>注意力熵</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="126"/>
        <source>entropy (nats)</source>
        <translation>熵（nat）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="127"/>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="128"/>
        <source>layer</source>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="129"/>
        <source>model&apos;s own
scale (α = 1)</source>
        <translation>模型自身的
缩放（α = 1）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="131"/>
        <source>model&apos;s own scale (α = 1)</source>
        <translation>模型自身的缩放（α = 1）</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="133"/>
        <source>α on that head only</source>
        <translation>α 只作用于该头</translation>
    </message>
    <message>
        <location filename="../../gui/model/figure.py" line="134"/>
        <source>α on that layer only</source>
        <translation>α 只作用于该层</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="26"/>
        <source>α = {0} · {1}</source>
        <translation>α = {0} · {1}</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="33"/>
        <source>layers {0}</source>
        <translation>层 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="36"/>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="37"/>
        <source>layer {0}, heads {1}</source>
        <translation>层 {0}，头 {1}</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="53"/>
        <source>Opening the model…</source>
        <translation>正在打开模型…</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="54"/>
        <source>{0}: {1} points computed…</source>
        <translation>{0}：已算出 {1} 个点…</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="56"/>
        <source>Cancelled: the {0} points computed stay.</source>
        <translation>已取消：已算出的 {0} 个点保留。</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="58"/>
        <location filename="../../gui/model/view.py" line="302"/>
        <source>Error: {0}</source>
        <translation>错误：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="60"/>
        <source>{0}: {1} points</source>
        <translation>{0}：{1} 个点</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="61"/>
        <source>Choose a model and a text, then Run.</source>
        <translation>选择模型和文本，然后运行。</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="67"/>
        <source>No model run yet.</source>
        <translation>尚未运行模型。</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="71"/>
        <source>{0} tokens</source>
        <translation>{0} 个词元</translation>
    </message>
    <message>
        <location filename="../../gui/model/texts.py" line="77"/>
        <source>lowest loss {0:.3f} at α = {1}</source>
        <translation>最低损失 {0:.3f}，在 α = {1}</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="161"/>
        <source>Model</source>
        <extracomment>The fewest milliseconds between two redraws while points stream in.</extracomment>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="204"/>
        <source>α shown:</source>
        <translation>显示的 α：</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="205"/>
        <source>The α whose predictions and continuation are shown beside the model&apos;s own (α = 1)</source>
        <translation>与模型自身（α = 1）并列显示其预测和续写的 α</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="208"/>
        <source>position:</source>
        <translation>位置：</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="209"/>
        <source>The token after which the next token is predicted</source>
        <translation>在此词元之后预测下一个词元</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="211"/>
        <source>The most likely next tokens and their probabilities</source>
        <translation>最可能的下一个词元及其概率</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="213"/>
        <source>Greedy continuation of the text by the model as trained (up to 32 tokens)</source>
        <translation>训练所得模型对文本的续写，每步取最可能的词元（最多 32 个词元）</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="215"/>
        <source>Greedy continuation under the α shown, in the scope of the run</source>
        <translation>在所显示的 α 下、按本次运行的作用范围进行的续写（每步取最可能的词元）</translation>
    </message>
    <message>
        <location filename="../../gui/model/inputs.py" line="64"/>
        <location filename="../../gui/model/view.py" line="230"/>
        <source>{0}: no such file or folder</source>
        <extracomment>A longer text is not kept in the settings (the default sentence comes back instead), as the capture dialog&apos;s is not: an INI file is no place for a pasted book.</extracomment>
        <translation>{0}：没有这个文件或文件夹</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="295"/>
        <source>Text: “{0}”</source>
        <translation>文本：“{0}”</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="353"/>
        <source>Next tokens after “{0}” (token {1}); the text goes on with “{2}”.</source>
        <translation>“{0}”（词元 {1}）之后的下一词元；文本接下来是“{2}”。</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="352"/>
        <source>(end of the text)</source>
        <translation>（文本结束）</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="361"/>
        <source>Model&apos;s own scale (α = 1)</source>
        <translation>模型自身的缩放（α = 1）</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="365"/>
        <source>Intervention: {0}</source>
        <translation>改动：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/model/view.py" line="367"/>
        <source>Intervention</source>
        <translation>改动</translation>
    </message>
</context>
<context>
    <name>ParameterPanel</name>
    <message>
        <location filename="../../engine/config/rules.py" line="265"/>
        <source>none (c = 1)</source>
        <translation>不缩放（c = 1）</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="280"/>
        <source>temperature 1/T</source>
        <translation>温度 1/T</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="287"/>
        <source>QK-norm</source>
        <translation>QK 归一化</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="296"/>
        <source>soft-cap</source>
        <translation>软截断</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="131"/>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="132"/>
        <source>causal</source>
        <translation>因果</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="61"/>
        <source>tokens n</source>
        <extracomment>Largest attention-matrix footprint a single request may allocate unless told otherwise. Every field of :class:`AttentionConfig`, in the parameter panel&apos;s row order. The ranges are the engine&apos;s; ``Gui.low/high`` narrow a row where a larger value only makes a request fail the memory budget or take minutes (the CLI and saved sessions still get the full range).</extracomment>
        <translation>词元数 n</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="68"/>
        <source>head dim d_k</source>
        <translation>头维度 d_k</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="75"/>
        <source>heads h</source>
        <translation>头数 h</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="92"/>
        <source>init std σ</source>
        <translation>初始化标准差 σ</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="104"/>
        <source>projection std s</source>
        <translation>投影标准差 s</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="112"/>
        <source>scaling rule</source>
        <translation>缩放规则</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="320"/>
        <source>YaRN temperature</source>
        <translation>YaRN 温度</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="99"/>
        <source>temperature T</source>
        <extracomment>The names of the :class:`RuleParameters`, in order. Each rule parameter&apos;s default. Range, panel row (``None`` gain: a &quot;default&quot; check box above the slider) and sweep option of every rule parameter. The range is the rule&apos;s own (any T &gt; 0 is a temperature); the panel&apos;s sliders cover a narrower, useful one.</extracomment>
        <translation>温度 T</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="108"/>
        <source>gain g</source>
        <translation>增益 g</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="118"/>
        <source>cap</source>
        <translation>截断值 cap</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="125"/>
        <source>Scalable-Softmax (Nakanishi 2025): logits = s·ln n·q·k/√d_k, n the keys the row sees (under a causal mask row i sees i + 1); s = 0.43 in the paper&apos;s toy.</source>
        <translation>Scalable-Softmax（Nakanishi 2025）：logit = s·ln n·q·k/√d_k，n 为该行能关注的键数（因果掩码下第 i 行为 i + 1 个）；论文的示例取 s = 0.43。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="134"/>
        <source>YaRN factor f</source>
        <translation>YaRN 长度倍数 f</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="135"/>
        <source>YaRN context-extension factor f: logits = q·k/(t·√d_k) with √(1/t) = 0.1·ln f + 1, i.e. c = (0.1·ln f + 1)²/√d_k (f = 1 gives 1/√d_k).</source>
        <translation>YaRN 上下文长度倍数 f：logit = q·k/(t·√d_k)，其中 √(1/t) = 0.1·ln f + 1，即 c = (0.1·ln f + 1)²/√d_k（f = 1 时即为 1/√d_k）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="145"/>
        <source>Llama 4&apos;s attn_scale β: c = (1 + β·ln(1 + ⌊n/L⌋))/√d_k, n the keys the row sees (its position + 1 under a causal mask); β = 0 gives 1/√d_k.</source>
        <translation>Llama 4 的 attn_scale β：c = (1 + β·ln(1 + ⌊n/L⌋))/√d_k，n 为该行可见的键数（因果掩码下为其位置 + 1）；β = 0 时即 1/√d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="153"/>
        <source>Llama 4&apos;s floor_scale L: c rises by β·ln 2 once a row sees L keys, by β·ln 3 at 2L, …</source>
        <translation>Llama 4 的 floor_scale L：一行可见 L 个键时 c 增大 β·ln 2，2L 个键时增大 β·ln 3，……</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="120"/>
        <source>q–k correlation ρ</source>
        <translation>q–k 相关系数 ρ</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="127"/>
        <source>mask</source>
        <translation>掩码</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="137"/>
        <source>query row</source>
        <translation>查询行</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="144"/>
        <source>seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="149"/>
        <source>samples</source>
        <translation>样本数</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="87"/>
        <source>link d_k = d_model / h</source>
        <translation>关联 d_k = d_model / h</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="97"/>
        <source>use projections W_Q, W_K</source>
        <translation>使用投影 W_Q、W_K</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="112"/>
        <source>default g = √d_k</source>
        <translation>默认 g = √d_k</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="62"/>
        <source>Number of tokens n (keys per softmax row). Uniform attention has entropy ln n; the largest of n Gaussian logits of std s is ≈ s·√(2 ln n).</source>
        <translation>词元数 n（每个 softmax 行中键的个数）。均匀注意力的熵为 ln n；n 个标准差为 s 的高斯 logit 中的最大值 ≈ s·√(2 ln n)。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="69"/>
        <source>Head dimension d_k. Raw scores: Var(q·k) = d_k·σ⁴ for iid q, k; 1/√d_k scaling gives Var = σ⁴, 1/d_k gives σ⁴/d_k.</source>
        <translation>头维度 d_k。原始分数：对独立同分布的 q、k，Var(q·k) = d_k·σ⁴；1/√d_k 缩放得到 Var = σ⁴，1/d_k 得到 σ⁴/d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="76"/>
        <source>Number of heads h; d_model must be divisible by h. With the link, d_k = d_model / h.</source>
        <translation>头数 h；d_model 必须能被 h 整除。启用关联时，d_k = d_model / h。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="82"/>
        <source>Model width d_model (divisible by h). With projections Var(q_j) = d_model·s².</source>
        <translation>模型宽度 d_model（可被 h 整除）。使用投影时 Var(q_j) = d_model·s²。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="88"/>
        <source>Derive d_k = d_model / h instead of setting d_k directly.</source>
        <translation>由 d_k = d_model / h 推出 d_k，而不是直接设置 d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="93"/>
        <source>Std σ of every component of q and k: Var(q·k) = d_k·σ⁴.</source>
        <translation>q 和 k 每个分量的标准差 σ：Var(q·k) = d_k·σ⁴。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="98"/>
        <source>Draw x ~ N(0, I_d_model) and q = x·W_Q, k = x·W_K with W ~ N(0, s²): Var(q_j) = d_model·s², Var(q·k) = d_k·(d_model·s²)².</source>
        <translation>抽取 x ~ N(0, I_d_model)，令 q = x·W_Q、k = x·W_K，其中 W ~ N(0, s²)：Var(q_j) = d_model·s²，Var(q·k) = d_k·(d_model·s²)²。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="105"/>
        <source>Projection init std s: Var(q_j) = d_model·s² (s = 1/√d_model keeps unit variance).</source>
        <translation>投影初始化标准差 s：Var(q_j) = d_model·s²（s = 1/√d_model 时保持单位方差）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="113"/>
        <source>How raw scores q·k become logits: each rule&apos;s factor c is in its menu item; formulas and sources in docs/numerics.md, “Scaling rules”.</source>
        <translation>原始分数 q·k 如何变为 logit：每条规则的因子 c 写在其选择框的条目中；式子与出处见 docs/numerics.md 的“Scaling rules”一节。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="100"/>
        <source>logits = q·k / T; T = √d_k reproduces 1/√d_k, Var(logit) = d_k·σ⁴ / T².</source>
        <translation>logit = q·k / T；T = √d_k 时等同于 1/√d_k，Var(logit) = d_k·σ⁴ / T²。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="113"/>
        <source>Use the default QK-norm gain g = √d_k.</source>
        <translation>使用默认的 QK 归一化增益 g = √d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="109"/>
        <source>QK-norm: logits = g·cos(q, k) ∈ [−g, g]; Var ≈ g²/d_k.</source>
        <translation>QK 归一化：logit = g·cos(q, k) ∈ [−g, g]；Var ≈ g²/d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="119"/>
        <source>Soft-cap: logits = cap·tanh((q·k/√d_k)/cap), bounded by ±cap.</source>
        <translation>软截断：logit = cap·tanh((q·k/√d_k)/cap)，以 ±cap 为界。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="121"/>
        <source>q–k correlation: k = ρ·q + √(1−ρ²)·ξ, so E[q·k] = ρ·d_k·σ² (grows like d_k: the case for 1/d_k).</source>
        <translation>q–k 相关性：k = ρ·q + √(1−ρ²)·ξ，因此 E[q·k] = ρ·d_k·σ²（随 d_k 线性增长：此时应使用 1/d_k）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="128"/>
        <source>causal: query i attends only to keys j ≤ i (masked logits = −∞).</source>
        <translation>因果：查询 i 只关注 j ≤ i 的键（被掩码的 logit = −∞）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="138"/>
        <source>Row i of the attention matrix shown in the softmax view (with a causal mask it sees i + 1 keys).</source>
        <translation>在 softmax 视图中显示的注意力矩阵第 i 行（使用因果掩码时它能看到 i + 1 个键）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="145"/>
        <source>Seed of every random draw (same seed, same numbers).</source>
        <translation>所有随机抽样的种子（种子相同，数值相同）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/attention.py" line="150"/>
        <source>Independent query rows used for the statistics (standard errors shrink like 1/√samples).</source>
        <translation>用于统计的独立查询行数（标准误按 1/√样本数 缩小）。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/panel.py" line="129"/>
        <source>Fixed by the loaded head ({0}). Use “Back to random q, k” to change it.</source>
        <extracomment>The fields a real head fixes (they only shape random q, k, or are the head&apos;s geometry).</extracomment>
        <translation>由已打开的头固定（{0}）。使用“回到随机 q, k”来更改。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/panel.py" line="161"/>
        <source>Not applied: {0}</source>
        <translation>未应用：{0}</translation>
    </message>
</context>
<context>
    <name>PlotItem</name>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="33"/>
        <location filename="../../gui/kit/plot_menus.py" line="87"/>
        <source>Plot Options</source>
        <translation>绘图设置</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="33"/>
        <source>Transforms</source>
        <translation>变换</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="34"/>
        <source>Downsample</source>
        <translation>降采样</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="34"/>
        <source>Average</source>
        <translation>平均</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="35"/>
        <source>Alpha</source>
        <translation>Alpha 值</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="35"/>
        <source>Grid</source>
        <translation>网格</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="36"/>
        <source>Points</source>
        <translation>数据点</translation>
    </message>
</context>
<context>
    <name>PrecisionView</name>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="132"/>
        <source>Precision</source>
        <extracomment>A point&apos;s weight error is drawn only when it averages at least this share of its rows: an error over the few rows that did not overflow describes those rows, not the point.</extracomment>
        <translation>数值精度</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="136"/>
        <source>Format:</source>
        <translation>格式：</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="137"/>
        <source>Number format of the logits, exponentials, row sum and weights (computed in float32 and rounded to it after every step)</source>
        <translation>logit、指数、行和与权重的数值格式（以 float32 计算，每一步后取为该格式最近的值）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="140"/>
        <source>Softmax:</source>
        <translation>Softmax：</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="141"/>
        <location filename="../../gui/tour/content.py" line="139"/>
        <source>max subtracted (stable)</source>
        <translation>减去最大值（稳定）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="142"/>
        <location filename="../../gui/tour/content.py" line="137"/>
        <source>naive exp(z)</source>
        <translation>直接 exp(z)（不减最大值）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="143"/>
        <source>Subtract the row maximum before exp (stable) or not (naive)</source>
        <translation>在 exp 之前减去行最大值（稳定）或不减</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="146"/>
        <source>Rows that overflow</source>
        <translation>超出范围的行</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="147"/>
        <source>share of rows</source>
        <translation>行的比例</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="149"/>
        <source>Weight error</source>
        <translation>权重误差</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="150"/>
        <source>mean per-row max|Δp|</source>
        <translation>每行 max|Δp| 的均值</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="152"/>
        <source>Largest logit</source>
        <translation>最大 logit</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="153"/>
        <source>mean row max|z|</source>
        <translation>每行 max|z| 的均值</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="158"/>
        <location filename="../../gui/tour/content.py" line="141"/>
        <source>only the logits rounded</source>
        <translation>只有 logit 取为该格式</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="292"/>
        <source>The error curve of {0} stops at d&lt;sub&gt;k&lt;/sub&gt; = {2:g}, where {1:.0%} of its rows overflow.</source>
        <translation>{0} 的误差曲线在 d&lt;sub&gt;k&lt;/sub&gt; = {2:g} 处中断：该处 {1:.0%} 的行超出范围。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="248"/>
        <source>largest {0}:
{1:.6g}</source>
        <translation>{0} 最大值：
{1:.6g}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="251"/>
        <source>ln {0:.6g} ≈ {1:.3g}:
naive exp
overflows</source>
        <translation>ln {0:.6g} ≈ {1:.3g}：
不减最大值时
exp 超出范围</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="268"/>
        <source>n = {0}, q and k ~ N(0, 1); weight errors over the first {3} of {1} rows per point, against the float64 max-subtracted softmax, averaged over the rows that do not overflow; where more than half of them overflow no error is drawn. Right: dashed, the largest {2} value; dotted, its logarithm, above which exp overflows unless the row maximum is subtracted.</source>
        <translation>n = {0}，q 与 k ~ N(0, 1)；权重误差取每个点 {1} 行中的前 {3} 行，相对于 float64 减最大值的 softmax，只对未超出范围的行取平均；超过一半的行超出范围时不绘出误差。右图：虚线为 {2} 的最大值；点线为它的对数，不减行最大值时 logit 超过它 exp 就超出范围。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="278"/>
        <source> Every key is correlated with the query: k = ρq + √(1−ρ²)ξ with ρ = {0}, so q·k grows like ρ·d&lt;sub&gt;k&lt;/sub&gt;.</source>
        <translation> 每个键都与查询相关：k = ρq + √(1−ρ²)ξ，ρ = {0}，因此 q·k 随 ρ·d&lt;sub&gt;k&lt;/sub&gt; 增长。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="283"/>
        <source> bfloat16 keeps float32&apos;s range (3.4·10³⁸).</source>
        <translation> bfloat16 与 float32 的范围相同（3.4·10³⁸）。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/precision.py" line="255"/>
        <source>  Sweep running.</source>
        <translation>  扫描进行中。</translation>
    </message>
</context>
<context>
    <name>ProbeView</name>
    <message>
        <location filename="../../gui/train/probe.py" line="162"/>
        <source>Probe attention</source>
        <translation>探针注意力</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="178"/>
        <source>The attention map of one fixed held-out example appears here while training runs.</source>
        <translation>训练进行时，这里显示一个固定留出样本的注意力图。</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="214"/>
        <source>{0}: diverged at step {1}</source>
        <translation>{0}：在第 {1} 步发散</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="217"/>
        <source>{0}: H = {1:.2f} nats</source>
        <translation>{0}：H = {1:.2f} 奈特</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="223"/>
        <source>Step {0}. Bars: attention weight p of the query at position {1} on each key position 0…{2}{3}. Magenta outline: the key that answers the probe.</source>
        <translation>第 {0} 步。条形：位置 {1} 处的查询在各键位置 0…{2} 上的注意力权重 p{3}。品红色框：回答该探针的键。</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="222"/>
        <source> (heads side by side within each key)</source>
        <translation>（每个键内各头并排）</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="231"/>
        <source>Step {0}. Rows: target positions{1}; columns: key positions 0…{2}. Magenta squares: the key that answers the probe.</source>
        <translation>第 {0} 步。行：目标位置{1}；列：键位置 0…{2}。品红色方块：回答该探针的键。</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="230"/>
        <source> of each head, heads stacked top to bottom</source>
        <translation>（每个头一组，各头自上而下排列）</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="358"/>
        <source>key position</source>
        <translation>键位置</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="359"/>
        <source>query position</source>
        <translation>查询位置</translation>
    </message>
    <message>
        <location filename="../../gui/train/probe.py" line="367"/>
        <source>No training run yet</source>
        <translation>尚未进行训练</translation>
    </message>
</context>
<context>
    <name>RealHead</name>
    <message>
        <location filename="../../gui/explorer/head_text.py" line="15"/>
        <source>layer {0} · head {1}</source>
        <translation>第 {0} 层 · 头 {1}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/head_text.py" line="18"/>
        <source>layer {0} ({1}) · head {2}</source>
        <translation>第 {0} 层（{1}）· 头 {2}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/head_text.py" line="21"/>
        <source>batch {0}</source>
        <translation>批次 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/kit/style.py" line="140"/>
        <source>layer {0}</source>
        <extracomment>Plot background and text colours (light theme, chosen for projectors and PNG export). Muted grey for theory curves and reference lines that belong to no single rule. Outline of the selected query row in the heatmaps (Okabe–Ito vermillion would clash with the &quot;none&quot; rule, so the highlight uses a saturated magenta that viridis never contains). Perceptually uniform colormap for probabilities in [0, 1]. Point sizes: ticks, axis labels, titles, free text (all ≥ 10 pt for projection). Options of curves with one point per key (up to n = 8192, redrawn on every change). Antialiased pens wider than one pixel go through Qt&apos;s general stroker, an order of magnitude slower, so these curves are drawn aliased; at one point per key their steps hide the jaggies. Rows longer than this are drawn without markers (they would merge into a band). The rule labels that are words, marked for translation where the rules are declared (engine.config.RULES); math labels such as 1/√d_k and YaRN read the same in every language.</extracomment>
        <translation>第 {0} 层</translation>
    </message>
    <message>
        <location filename="../../gui/kit/style.py" line="150"/>
        <source>trained with {0}</source>
        <translation>用 {0} 训练</translation>
    </message>
</context>
<context>
    <name>ScalingRule</name>
    <message>
        <location filename="../../engine/config/rules.py" line="264"/>
        <source>none</source>
        <extracomment>c of a rule from its parameters, d_k and, for a per-row rule, the keys each row sees (float64, &gt;= 1); a float for the other rules. Every rule, in the menus&apos; order (the enum&apos;s).</extracomment>
        <translation>不缩放</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="287"/>
        <source>QK-norm</source>
        <translation>QK 归一化</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="295"/>
        <source>soft-cap</source>
        <translation>软截断</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="304"/>
        <source>ln n/√d_k</source>
        <translation>ln n/√d_k</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="311"/>
        <source>SSMax</source>
        <translation>SSMax</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="332"/>
        <source>Llama 4</source>
        <translation>Llama 4</translation>
    </message>
</context>
<context>
    <name>SoftmaxView</name>
    <message>
        <location filename="../../gui/explorer/views/softmax.py" line="69"/>
        <source>Softmax of one row</source>
        <extracomment>Head whose row is shown (the per-row statistics of the legend belong to this head).</extracomment>
        <translation>单行 Softmax</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/softmax.py" line="75"/>
        <source>key index j</source>
        <translation>键索引 j</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/softmax.py" line="76"/>
        <source>attention weight p&lt;sub&gt;j&lt;/sub&gt;</source>
        <translation>注意力权重 p&lt;sub&gt;j&lt;/sub&gt;</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/softmax.py" line="78"/>
        <source>uniform</source>
        <translation>均匀分布</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/softmax.py" line="112"/>
        <source>Query row i = {0} (head 1), n = {1} keys</source>
        <translation>查询行 i = {0}（头 1），n = {1} 个键</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/softmax.py" line="116"/>
        <source>Query row i = {0} ({1}), n = {2} keys</source>
        <translation>查询行 i = {0}（{1}），n = {2} 个键</translation>
    </message>
</context>
<context>
    <name>SourceBar</name>
    <message>
        <location filename="../../gui/explorer/source_bar.py" line="75"/>
        <source>Real q, k: {0}</source>
        <translation>真实 q, k：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/source_bar.py" line="77"/>
        <source>Back to random q, k</source>
        <translation>回到随机 q, k</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/source_bar.py" line="78"/>
        <source>Show q and k drawn from the parameters again (the parameters from before the head was opened)</source>
        <translation>重新显示按参数随机抽取的 q 和 k（使用打开此头之前的参数）</translation>
    </message>
</context>
<context>
    <name>Startup</name>
    <message>
        <location filename="../../gui/app.py" line="237"/>
        <source>Attention Scale Explorer cannot start</source>
        <extracomment>How long a thread may keep the interpreter lock while another waits (CPython: 5 ms).</extracomment>
        <translation>注意力缩放探索器无法启动</translation>
    </message>
    <message>
        <location filename="../../gui/app.py" line="238"/>
        <source>A file the program needs is missing or cannot be read. Reinstall the program.</source>
        <translation>程序所需的一个文件不存在或无法读取。请重新安装本程序。</translation>
    </message>
</context>
<context>
    <name>TemperatureView</name>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="115"/>
        <source>Temperature</source>
        <extracomment>Range of the temperature slider (log scale) and spin box. Slider resolution: steps over the three decades of the range.</extracomment>
        <translation>温度</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="119"/>
        <source>Temperature T:</source>
        <translation>温度 T：</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="121"/>
        <source>Temperature T (log scale, 0.1 to 100)</source>
        <translation>温度 T（对数刻度，0.1 到 100）</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="122"/>
        <source>Temperature T</source>
        <translation>温度 T</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="124"/>
        <source>Set T to √d_k: softmax(z/T) then equals the 1/√d_k rule</source>
        <translation>将 T 设为 √d_k：此时 softmax(z/T) 与 1/√d_k 规则相同</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="129"/>
        <source>key index j</source>
        <translation>键索引 j</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="130"/>
        <source>attention weight p&lt;sub&gt;j&lt;/sub&gt;</source>
        <translation>注意力权重 p&lt;sub&gt;j&lt;/sub&gt;</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="133"/>
        <source>Dividing by T = √d&lt;sub&gt;k&lt;/sub&gt; is the 1/√d&lt;sub&gt;k&lt;/sub&gt; rule, forward and backward: ∂softmax(z/T)/∂z = J(p&lt;sub&gt;T&lt;/sub&gt;)/T. Small T sharpens, large T flattens the row.</source>
        <translation>除以 T = √d&lt;sub&gt;k&lt;/sub&gt; 就是 1/√d&lt;sub&gt;k&lt;/sub&gt; 规则，前向与反向传播均如此：∂softmax(z/T)/∂z = J(p&lt;sub&gt;T&lt;/sub&gt;)/T。T 小则行分布更尖锐，T 大则更平坦。</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="169"/>
        <source>Query row i = {0} (head 1), T = {1}, √d&lt;sub&gt;k&lt;/sub&gt; = {2}</source>
        <translation>查询行 i = {0}（头 1），T = {1}，√d&lt;sub&gt;k&lt;/sub&gt; = {2}</translation>
    </message>
    <message>
        <location filename="../../gui/explorer/views/temperature.py" line="173"/>
        <source>Query row i = {0} ({1}), T = {2}, √d&lt;sub&gt;k&lt;/sub&gt; = {3}</source>
        <translation>查询行 i = {0}（{1}），T = {2}，√d&lt;sub&gt;k&lt;/sub&gt; = {3}</translation>
    </message>
</context>
<context>
    <name>TourPanel</name>
    <message>
        <location filename="../../gui/tour/panel.py" line="258"/>
        <source>◀ Back</source>
        <extracomment>``text`` with ``&amp;``, ``&lt;`` and ``&gt;`` escaped for a rich-text label.</extracomment>
        <translation>◀ 上一步</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="341"/>
        <source>Next ▶</source>
        <translation>下一步 ▶</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="259"/>
        <source>Previous step (Alt+Left)</source>
        <translation>上一步（Alt+←）</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="344"/>
        <source>Next step (Alt+Right)</source>
        <translation>下一步（Alt+→）</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="336"/>
        <source>Step {0} / {1}</source>
        <translation>第 {0} / {1} 步</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="340"/>
        <source>Finish</source>
        <translation>完成</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="343"/>
        <source>End the tour (Alt+Right)</source>
        <translation>结束导览（Alt+→）</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="347"/>
        <source>Look at:</source>
        <translation>请看：</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="348"/>
        <source>Try it yourself:</source>
        <translation>动手试试：</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="361"/>
        <source>Engine says:</source>
        <translation>引擎计算结果：</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="364"/>
        <source>could not compute: {0}</source>
        <translation>无法计算：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="368"/>
        <source>computing…</source>
        <translation>正在计算…</translation>
    </message>
    <message>
        <location filename="../../gui/tour/panel.py" line="375"/>
        <source>claim {0}</source>
        <translation>论断 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/tour/guide.py" line="33"/>
        <source>Guided tour</source>
        <translation>导览</translation>
    </message>
    <message>
        <location filename="../../gui/tour/guide.py" line="34"/>
        <source>&amp;Guided tour</source>
        <translation>导览(&amp;G)</translation>
    </message>
    <message>
        <location filename="../../gui/tour/guide.py" line="36"/>
        <source>Step through the interview questions with live experiments</source>
        <translation>借助实时实验逐步讲解面试问题</translation>
    </message>
</context>
<context>
    <name>TrainCurvesView</name>
    <message>
        <location filename="../../gui/train/curves.py" line="117"/>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="118"/>
        <source>cross-entropy (nats)</source>
        <translation>交叉熵（奈特）</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="119"/>
        <source>Held-out accuracy</source>
        <translation>留出集准确率</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="120"/>
        <source>accuracy</source>
        <translation>准确率</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="121"/>
        <source>Global gradient norm</source>
        <translation>全局梯度范数</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="122"/>
        <source>Mean attention entropy</source>
        <translation>平均注意力熵</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="123"/>
        <source>H (nats)</source>
        <translation>H（奈特）</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="125"/>
        <source>step</source>
        <translation>步数</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="129"/>
        <source>chance</source>
        <translation>随机水平</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="111"/>
        <source>Training curves</source>
        <extracomment>The x range of the empty plots before the first run has a length (steps). Panel names in layout order, with log-y.</extracomment>
        <translation>训练曲线</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="51"/>
        <source>Training loss:</source>
        <extracomment>Steps the smoothed training loss averages over: enough to calm a batch of 64&apos;s noise, few enough to follow the fall of a 500-step run.</extracomment>
        <translation>训练损失：</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="52"/>
        <source>every step</source>
        <translation>每一步</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="53"/>
        <source>mean of the last {0} steps</source>
        <translation>最近 {0} 步的均值</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="55"/>
        <source>The loss of one batch jumps by orders of magnitude from step to step; its trailing mean shows the trend next to the held-out loss. The CSV keeps every step.</source>
        <translation>单个批次的损失每一步都会上下跳动很多；它最近几步的均值显出与留出集损失并列的趋向。CSV 保留每一步的值。</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="59"/>
        <source>Loss axis:</source>
        <translation>损失坐标轴：</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="60"/>
        <source>log</source>
        <translation>对数</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="61"/>
        <source>linear</source>
        <translation>线性</translation>
    </message>
    <message>
        <location filename="../../gui/train/loss_display.py" line="62"/>
        <source>Log shows the late, small losses; linear shows the early fall as it is.</source>
        <translation>对数坐标显出训练后段很小的损失；线性坐标按原样显出开始时的下降。</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="292"/>
        <source>Press Start (Ctrl+T) to train the selected rules side by side: same initial weights, same batches.</source>
        <translation>按“开始”（Ctrl+T）并排训练所选规则：相同的初始权重，相同的批次。</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="300"/>
        <source>{0}: diverged at step {1}</source>
        <translation>{0}：在第 {1} 步发散</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="303"/>
        <source>{0}: held-out loss {1:.3g}, accuracy {2:.2f}</source>
        <translation>{0}：留出集损失 {1:.3g}，准确率 {2:.2f}</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="306"/>
        <source>Step {0} of {1}, chance loss ln {2} = {3:.3g}.</source>
        <translation>第 {0} / {1} 步，随机水平损失 ln {2} = {3:.3g}。</translation>
    </message>
    <message>
        <location filename="../../gui/train/curve_items.py" line="105"/>
        <source>diverged at step {0}</source>
        <translation>在第 {0} 步发散</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="321"/>
        <source>training loss</source>
        <translation>训练损失</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="323"/>
        <source>training loss, mean of {0} steps</source>
        <translation>训练损失，{0} 步均值</translation>
    </message>
    <message>
        <location filename="../../gui/train/curves.py" line="326"/>
        <source>held-out</source>
        <translation>留出集</translation>
    </message>
</context>
<context>
    <name>TrainPanel</name>
    <message>
        <location filename="../../gui/train/panel.py" line="61"/>
        <source>the learning-rate list is empty</source>
        <extracomment>Rules offered for training: every rule ``main.py train --rules`` accepts (the Train tab has no rule parameter controls: they take their declared defaults).</extracomment>
        <translation>学习率列表为空</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="68"/>
        <source>learning rates: {0!r} is not a number</source>
        <translation>学习率：{0!r} 不是数字</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="76"/>
        <source>key → value lookup</source>
        <translation>键 → 值查找</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="77"/>
        <source>copy k places back</source>
        <translation>复制向前第 k 个词元</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="69"/>
        <source>Retrieval: n key/value pairs and a query key; answer the paired value (needs a sharp attention on one of n keys). Copy back: output the token k places back (causal mask).</source>
        <translation>检索：n 个键/值对和一个查询键；输出与之配对的值（需要在 n 个键中的一个上形成尖锐的注意力）。回溯复制：输出向前第 k 个位置的词元（因果掩码）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="266"/>
        <source>No scaling: logits q·k with variance ≈ d_k at init.</source>
        <translation>不缩放：logit 为 q·k，初始化时方差 ≈ d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="271"/>
        <source>Divide the logits by √d_k (the Transformer rule).</source>
        <translation>将 logit 除以 √d_k（Transformer 的规则）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="276"/>
        <source>Divide the logits by d_k (μP).</source>
        <translation>将 logit 除以 d_k（μP）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="288"/>
        <source>Normalise q and k to unit length, times a gain (default √d_k).</source>
        <translation>将 q 和 k 归一化为单位长度，再乘以增益（默认 √d_k）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="313"/>
        <source>Scalable-Softmax: the 1/√d_k logits times s·ln n (s = {0}).</source>
        <translation>Scalable-Softmax：1/√d_k 的 logits 乘以 s·ln n（s = {0}）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="321"/>
        <source>YaRN&apos;s temperature: the 1/√d_k logits times (0.1·ln f + 1)² (f = {0}).</source>
        <translation>YaRN 的温度：1/√d_k 的 logits 乘以 (0.1·ln f + 1)²（f = {0}）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="334"/>
        <source>Llama 4&apos;s position temperature: the 1/√d_k logits times 1 + β·ln(1 + ⌊n/L⌋), n the keys a row sees (β = {0}, L = {1}).</source>
        <translation>Llama 4 的位置温度：1/√d_k 的 logits 乘以 1 + β·ln(1 + ⌊n/L⌋)，n 为该行可见的键数（β = {0}，L = {1}）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="85"/>
        <source>Head dimension d_k (width of q and k).</source>
        <translation>头维度 d_k（q 和 k 的宽度）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="88"/>
        <source>Model width d_model; &apos;auto&apos; uses d_k × heads.</source>
        <translation>模型宽度 d_model；“自动”取 d_k × 头数。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="90"/>
        <source>auto (d_k × heads)</source>
        <translation>自动（d_k × 头数）</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="94"/>
        <source>Number of attention heads.</source>
        <translation>注意力头数。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="97"/>
        <source>Retrieval: number of key/value pairs; copy back: sequence length.</source>
        <translation>检索：键/值对的个数；回溯复制：序列长度。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="103"/>
        <source>Distinct symbols; chance loss is ln(vocab). Retrieval needs vocab ≥ n.</source>
        <translation>不同符号的个数；随机水平损失为 ln(vocab)。检索任务要求 vocab ≥ n。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="111"/>
        <source>Copy back: distance k to the copied token (k &lt; n).</source>
        <translation>回溯复制：到被复制词元的距离 k（k &lt; n）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="129"/>
        <source>Training examples per step.</source>
        <translation>每步的训练样本数。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="133"/>
        <source>Optimiser steps per run.</source>
        <translation>每次运行的优化步数。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="176"/>
        <source>Divergence factor</source>
        <translation>发散倍数</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="177"/>
        <source>A run is marked diverged when its training loss exceeds this multiple of its initial held-out loss (or the loss, gradients or weights become non-finite).</source>
        <translation>当一次运行的训练损失超过其初始留出集损失的这一倍数（或损失、梯度或权重变为非有限值）时，将其标记为发散。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="124"/>
        <source>Learning rate of the training run (arrows step 1, 2, 3, 5 × 10^k).</source>
        <translation>训练运行的学习率（箭头按 1、2、3、5 × 10^k 步进）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="117"/>
        <source>Adam (β = 0.9, 0.999) or plain SGD.</source>
        <translation>Adam（β = 0.9, 0.999）或普通 SGD。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="137"/>
        <source>Seed of the initial weights, the batches and the held-out set.</source>
        <translation>初始权重、批次和留出集的随机种子。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="150"/>
        <source>auto (1/√d_model)</source>
        <translation>自动（1/√d_model）</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="144"/>
        <source>Standard deviation of the W_Q, W_K, W_V entries at init. Auto: 1/√d_model, so q and k components have unit variance and unscaled logits variance d_k.</source>
        <translation>初始化时 W_Q、W_K、W_V 权重的标准差。自动：1/√d_model，使 q 和 k 的分量方差为 1，不缩放的 logit 方差为 d_k。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="160"/>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="155"/>
        <source>Clip the global gradient norm to this value before each optimiser step (off: no clipping).</source>
        <translation>每个优化步之前把全局梯度范数截断到此值（关闭：不截断）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="164"/>
        <source>Examples in the fixed held-out set (drawn from the seed); example 0 is the probe whose attention is shown.</source>
        <translation>固定留出集中的样本数（由随机种子决定）；样本 0 是显示其注意力的探针。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="195"/>
        <source>Learning-rate sweep: seeds 0…N−1 per learning rate (mean and spread).</source>
        <translation>学习率扫描：每个学习率使用种子 0…N−1（取均值和离散范围）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="198"/>
        <source>Learning-rate sweep: comma-separated learning rates.</source>
        <translation>学习率扫描：以逗号分隔的学习率。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="200"/>
        <source>Start</source>
        <translation>开始</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="201"/>
        <source>Train the checked rules side by side (Ctrl+T).</source>
        <translation>并排训练勾选的规则（Ctrl+T）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="202"/>
        <source>Run lr sweep</source>
        <translation>运行学习率扫描</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="202"/>
        <source>Train every rule at every listed learning rate and seed; plot the final held-out loss (Ctrl+L).</source>
        <translation>以列出的每个学习率和种子训练每种规则；绘制最终留出集损失（Ctrl+L）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="205"/>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="206"/>
        <source>Hold the run between two steps (Ctrl+P).</source>
        <translation>在两步之间暂停运行（Ctrl+P）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="207"/>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="208"/>
        <source>Continue a paused run (Ctrl+Shift+P).</source>
        <translation>继续已暂停的运行（Ctrl+Shift+P）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="209"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="210"/>
        <source>End the run now; the curves so far stay (Ctrl+Shift+T).</source>
        <translation>立即结束运行；已有曲线会保留（Ctrl+Shift+T）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="211"/>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="212"/>
        <source>Stop and clear all curves and the sweep (Ctrl+Shift+X).</source>
        <translation>停止并清除所有曲线和扫描结果（Ctrl+Shift+X）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="143"/>
        <source>Init std</source>
        <translation>初始标准差</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="154"/>
        <source>Clip norm</source>
        <translation>梯度截断</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="163"/>
        <source>Held-out size</source>
        <translation>留出集大小</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="59"/>
        <source>%p% — stopping</source>
        <translation>%p% — 正在停止</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="65"/>
        <source>idle</source>
        <translation>空闲</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="30"/>
        <source>Progress of the run or sweep, with the estimated time left (pauses excluded).</source>
        <translation>运行或扫描的进度，以及预计剩余时间（不含暂停）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="281"/>
        <source>Divide the logits by a temperature T (here T = √d_k: the same model as 1/√d_k).</source>
        <translation>把 logits 除以温度 T（这里 T = √d_k：与 1/√d_k 是同一个模型）。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="297"/>
        <source>1/√d_k, then cap·tanh(s/cap) with cap = {0}.</source>
        <translation>先乘 1/√d_k，再取 cap·tanh(s/cap)，cap = {0}。</translation>
    </message>
    <message>
        <location filename="../../engine/config/rules.py" line="305"/>
        <source>Multiply the 1/√d_k logits by ln n, n the keys a row sees.</source>
        <translation>把 1/√d_k 的 logits 乘以 ln n，n 为该行看到的 key 数。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="213"/>
        <source>Inspect trained model</source>
        <translation>检查训练后的模型</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="213"/>
        <source>Write every rule&apos;s trained q and k on the held-out set to a tensor file (layer i = rule i) and inspect its heads. Available once a run has trained and nothing runs (Ctrl+Shift+I).</source>
        <translation>将每条规则训练后在留出集上的 q 和 k 保存为数组文件（第 i 层 = 第 i 条规则）并检查各个头。训练过且没有任务运行时可用（Ctrl+Shift+I）。</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="223"/>
        <source>Task and model</source>
        <translation>任务与模型</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="68"/>
        <source>Task</source>
        <extracomment>Every field of :class:`TrainConfig`, in the Train panel&apos;s row order (``group``: its box). ``Gui.high`` narrows a row where larger models only take minutes per run or fail the memory budget (a d_k 512 step already takes seconds here); the CLI takes the engine&apos;s full range. ``Cli.after`` keeps the established order of the options in ``--help``.</extracomment>
        <translation>任务</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="82"/>
        <source>Rules</source>
        <translation>规则</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="93"/>
        <source>Heads</source>
        <translation>头数</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="102"/>
        <source>Vocabulary</source>
        <translation>词表大小</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="110"/>
        <source>Copy offset k</source>
        <translation>复制偏移 k</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="224"/>
        <source>Training</source>
        <translation>训练</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="116"/>
        <source>Optimiser</source>
        <translation>优化器</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="123"/>
        <source>Learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="128"/>
        <source>Batch</source>
        <translation>批大小</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="132"/>
        <source>Steps</source>
        <translation>步数</translation>
    </message>
    <message>
        <location filename="../../engine/config/train.py" line="136"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="225"/>
        <source>Learning-rate sweep</source>
        <translation>学习率扫描</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="226"/>
        <source>Learning rates</source>
        <translation>学习率列表</translation>
    </message>
    <message>
        <location filename="../../gui/train/panel.py" line="227"/>
        <source>Seeds</source>
        <translation>种子数</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="57"/>
        <source>%p% — paused</source>
        <translation>%p% — 已暂停</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="61"/>
        <source>%p% — writing q and k</source>
        <translation>%p% — 正在保存 q 和 k</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="63"/>
        <source>%p% — done</source>
        <translation>%p% — 已完成</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="65"/>
        <source>%p% — stopped</source>
        <translation>%p% — 已停止</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="68"/>
        <source>%p% — {0} left</source>
        <translation>%p% — 剩余 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="77"/>
        <source>{0} s</source>
        <translation>{0} 秒</translation>
    </message>
    <message>
        <location filename="../../gui/train/progress.py" line="78"/>
        <source>{0} min {1:02d} s</source>
        <translation>{0} 分 {1:02d} 秒</translation>
    </message>
</context>
<context>
    <name>TrainTab</name>
    <message>
        <location filename="../../gui/train/tab.py" line="138"/>
        <source>Training</source>
        <extracomment>The file name the Inspect button offers (in the last export folder). A small model for driving the buttons in the self-test (its steps are nearly instant).</extracomment>
        <translation>训练中</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="139"/>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="140"/>
        <source>Stopping after this step</source>
        <translation>本步后停止</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="141"/>
        <source>Writing the trained q and k</source>
        <translation>正在写入训练后的 q 和 k</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="148"/>
        <source>Error: {0}</source>
        <translation>错误：{0}</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="150"/>
        <source>Done</source>
        <translation>完成</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="152"/>
        <source>Ready: press Start to train</source>
        <translation>就绪：按“开始”训练</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="249"/>
        <source>Save the trained q and k</source>
        <translation>保存训练后的 q 和 k</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="251"/>
        <source>Tensor files (*.npz *.safetensors)</source>
        <translation>q/k 数组文件 (*.npz *.safetensors)</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="350"/>
        <source>Training: step {0} of {1}, {2:.0f} steps/s</source>
        <translation>训练中：第 {0} / {1} 步，{2:.0f} 步/秒</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="353"/>
        <source>Step {0} of {1}</source>
        <translation>第 {0} / {1} 步</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="356"/>
        <source>Sweep: {0} of {1} runs</source>
        <translation>扫描：{0} / {1} 次运行</translation>
    </message>
    <message>
        <location filename="../../gui/train/tab.py" line="359"/>
        <source>Wrote {0}</source>
        <translation>已保存 {0}</translation>
    </message>
    <message>
        <location filename="../../gui/train/worker.py" line="98"/>
        <source>The training process stopped unexpectedly ({0}). Start the run again; if it stops again, fewer tokens, a smaller batch or a smaller model need less memory.</source>
        <translation>训练进程意外停止（{0}）。请重新开始运行；如果再次停止，减小词元数、批大小或模型规模可以降低内存占用。</translation>
    </message>
    <message>
        <location filename="../../gui/train/worker.py" line="111"/>
        <source>There is no trained model to inspect.</source>
        <translation>没有可检查的训练模型。</translation>
    </message>
    <message>
        <location filename="../../gui/train/worker.py" line="113"/>
        <source>Could not write {0}: {1}</source>
        <translation>无法保存 {0}：{1}</translation>
    </message>
</context>
<context>
    <name>ViewBox</name>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="29"/>
        <location filename="../../gui/kit/plot_menus.py" line="71"/>
        <source>ViewBox options</source>
        <translation>视图设置</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="29"/>
        <location filename="../../gui/kit/plot_menus.py" line="72"/>
        <source>View All</source>
        <translation>显示全部</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="30"/>
        <source>axis</source>
        <translation>轴</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="30"/>
        <location filename="../../gui/kit/plot_menus.py" line="77"/>
        <source>Mouse Mode</source>
        <translation>鼠标模式</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="31"/>
        <source>3 button</source>
        <translation>三键</translation>
    </message>
    <message>
        <location filename="../../gui/kit/plot_menus.py" line="31"/>
        <source>1 button</source>
        <translation>单键</translation>
    </message>
</context>
</TS>
