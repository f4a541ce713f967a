"""The seed note's MultiHeadAttention class body, unchanged apart from imports and comments.

It must run against tutorial_lib's ScaledDotProductAttention: the test in
test_seed_interface.py checks that it does, and that it computes what
tutorial_lib.attention.MultiHeadAttention computes.
"""

import torch.nn as nn

from tutorial_lib.attention import ScaledDotProductAttention


class MultiHeadAttention(nn.Module):
    """Multi-Head Attention module"""

    def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
        super().__init__()

        self.n_head = n_head
        self.d_k = d_k
        self.d_v = d_v

        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)

        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)

        self.attention = ScaledDotProductAttention(temperature=d_k**0.5)

        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, q, k, v, mask=None):
        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, len_k, len_v = q.size(0), q.size(1), k.size(1), v.size(1)

        residual = q

        q_proj = self.w_qs(q).view(sz_b, len_q, n_head, d_k)
        k_proj = self.w_ks(k).view(sz_b, len_k, n_head, d_k)
        v_proj = self.w_vs(v).view(sz_b, len_v, n_head, d_v)

        q_proj = q_proj.transpose(1, 2)
        k_proj = k_proj.transpose(1, 2)
        v_proj = v_proj.transpose(1, 2)

        if mask is not None:
            mask = mask.unsqueeze(1)

        attention_output, attn_weights = self.attention(q_proj, k_proj, v_proj, mask=mask)

        concat_output = attention_output.transpose(1, 2).contiguous().view(sz_b, len_q, -1)

        final_output = self.dropout(self.fc(concat_output))

        final_output += residual
        final_output = self.layer_norm(final_output)

        return final_output, attn_weights
