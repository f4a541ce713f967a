"""What tests/built/mainline.py counts as a chapter's main line, on a page made up for it."""

from tests.built.mainline import measure

PAGE = """<html><body><article class="bd-article">
<section id="q"><h1>Q9 · A question<a class="headerlink" href="#q">#</a></h1>
<section id="what-to-remember"><h2>What to remember</h2>
<p>Heads split the width. They cost the same as one head of 512 numbers. Q2 says why.</p>
</section>
<p>One claim with <span class="pasted-text">0.25</span> and a word glued:
<span class="pasted-text">every</span>.</p>
<details class="sd-dropdown"><summary>The evidence</summary>
<p>Spread <span class="pasted-text">0.1</span> to <span class="pasted-text">0.3</span></p>
</details>
<div class="admonition dropdown"><p>Seeds <span class="pasted-text">3</span></p></div>
<div class="cell"><pre>print(1, 2, 3)</pre><div class="cell_output">1 2 3</div></div>
<table><tr><td>9</td><td><span class="pasted-text">9</span></td></tr></table>
<figure><img src="f.png"/><figcaption><p>A caption of five words.</p></figcaption></figure>
<div class="exercise"><p>Compute <span class="pasted-text">7</span>.</p></div>
<div class="explorer"><p>frame 1 of 30</p></div>
<aside class="footnote-list"><p>Vaswani et al. 2017.</p></aside>
<section id="references"><h2>References</h2><p>A long list.</p></section>
</section></article></body></html>"""


def test_only_the_argument_is_counted():
    m = measure(PAGE)
    assert m.glued_numbers == 1  # 0.25; "every" is a glued word, the rest is off the line
    kept = "Q9 · A question What to remember Heads split the width. They cost the same as one"
    kept += " head of 512 numbers. Q2 says why. One claim with 0.25 and a word glued: every ."
    kept += " A caption of five words."
    assert m.words == len(kept.split())


def test_what_to_remember_is_read_for_sentences_numbers_and_place():
    m = measure(PAGE)
    assert m.remember_sentences == 3
    assert m.remember_numbers == 1  # 512; a chapter's name (Q2) is not a number
    assert 0 < m.remember_at < 0.2
