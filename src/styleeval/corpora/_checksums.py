"""Pinned checksums of every source file (copied from ``../shared/data/README.md``).

Keys are paths relative to the data root (``<folder>/<path in the source repository>``); values are
``(sha256, size in bytes)``. Files that were never inspected locally are pinned by their git blob SHA-1
in :data:`GIT_BLOB_SHA1` instead (the hash GitHub shows for a file at a commit).
"""

from __future__ import annotations

SHA256: dict[str, tuple[str, int]] = {
    "asset/LICENSE": ("50f03face87211373b7a447607f9ca26ad95ad339e8293ac2807958bad7b5447", 19339),
    "asset/dataset/asset.test.orig": ("673ceb2672a37168a52040d75e16f9ffd1e3777b9f68e19207f2adf6542723f1", 43745),
    "asset/dataset/asset.test.simp.0": ("66f36029d0c732eb92886021faefe531c6cfd0a32bdbe7ae4aa97fd45bd1b046", 35457),
    "asset/dataset/asset.test.simp.1": ("d323ceb364abbe84c79b14b028aa1ff563cd94955fbab19049612548dbb0f83f", 34096),
    "asset/dataset/asset.test.simp.2": ("786b55f8425ce4a993e98be5e2bea9ef87bf536b96dc13f7a57c4733fdb63e06", 34348),
    "asset/dataset/asset.test.simp.3": ("e211c9e2ede1dfe315097132dbe4feda76b309bdc636a5394cb5d2664ba5bf52", 37292),
    "asset/dataset/asset.test.simp.4": ("37be9cf0592c0f68d87848dc9c442fe62f344518c1993896c00788bf943b755d", 35887),
    "asset/dataset/asset.test.simp.5": ("8485210573a3bd76116de8e978b227677c6c207111a4938729397c4e603dfa46", 35351),
    "asset/dataset/asset.test.simp.6": ("f0cb3ab823d23203ea044f81bd7e67cc823db0632095e43b78a54a9891a0b0a8", 35846),
    "asset/dataset/asset.test.simp.7": ("35cbb8b9964252a1470607634f19ad946c6bc2951b3e500eedd826baf12bd3c8", 34560),
    "asset/dataset/asset.test.simp.8": ("047b6419590b88f93b435d3177bba1883dc9c0dc178676e48470b408236446f4", 35830),
    "asset/dataset/asset.test.simp.9": ("3f5745e4f2743563b88ea4284ec35fa4ddb68d62de80b63ffb87751b998fe6b8", 35313),
    "asset/human_ratings/human_ratings.csv": ("09ea6ee887af56be380334677ca2f3ba561f67abbb64ef1e6382fadf440d5593", 1012140),
    "lai_formality/LICENSE": ("77735e896ae71ba3cfe3712b84403066d587ad5bc4ae360fb8201c93b6d5a677", 1069),
    "lai_formality/data/outputs/BART.human.txt": ("b7cfd61475cc7a96ff423432904a0ab5d5d17fb5192cad2b2419d27ed7f0b264", 14522),
    "lai_formality/data/outputs/HIGH.human.txt": ("17607c8a59ca93a3eca0d1ba0f1c44c45a6d8a75f506cb85e691f5fa9952d7ca", 14596),
    "lai_formality/data/outputs/IBT.human.txt": ("b2ca20073e79d6ad484a03d7dab078a96a76fce248e48ef8a8129e0ede2b47de", 14546),
    "lai_formality/data/outputs/LUO.human.txt": ("2846ee9400dfdd5d7b7eee7326b6e9a86289e9458b1db22ff1f6426c93ce1f72", 13680),
    "lai_formality/data/outputs/NIU.human.txt": ("20da6e1a9362e4b8d01c9cdb007c2dc8434ce69ba9e94d57d64d100b12c0a13e", 14451),
    "lai_formality/data/outputs/RAO.human.txt": ("d10651494cd7775798e01b82f2d40c475b70eb84e2868518c472dd0c38f53740", 14526),
    "lai_formality/data/outputs/REF.human.txt": ("3362bf43690ca33729678ebb55b0944224443be1fddaf012131944bc395b03cd", 14544),
    "lai_formality/data/outputs/YI.human.txt": ("e8570e538a1976fb9ec0ca7f3d0ddbca093e4fd486a4cd0240a41c9d3619c938", 14387),
    "lai_formality/data/outputs/ZHOU.human.txt": ("71af03ff11ddd2cb5e38d438f1d2d37143aa473343ef7027c5f567638bd08b0c", 14386),
    "mir_yelp/data/sentiment.test.0": ("dc9b8f3d2c9d10403f2f110227f986ca46e205d687303353f3093de730ec24f0", 5680),
    "mir_yelp/data/sentiment.test.1": ("c353c8a5a8c9ee21c6b42fb74afd8d47c98effb35a99e919c6b3b45a290d8235", 4979),
    "mir_yelp/evaluations/human/content_preservation/ARAE_lambda_1.npy": ("e5e94f6084d008a16164cb49d022a20544ae26a3754d08e3df73917b46e2a550", 2032),
    "mir_yelp/evaluations/human/content_preservation/ARAE_lambda_10.npy": ("80d7a37622c09093cddbae420e68ddb8b4f1b694af51bddc8456c3d37852c0c8", 2032),
    "mir_yelp/evaluations/human/content_preservation/ARAE_lambda_5.npy": ("1b29a4bf3b82396bae924004048ad0b754fa382502c917cc558cdd74477737e0", 2032),
    "mir_yelp/evaluations/human/content_preservation/CAAE_rho_0_01.npy": ("be143e3c9375fea94f63ed2b5a43891ed135cf403a62ffe2bd0f9c14c0855a7c", 2032),
    "mir_yelp/evaluations/human/content_preservation/CAAE_rho_0_1.npy": ("d4ea71f2edbb7f7e6c0c807d9c1ebefd31339811f9d4c2650015a0db9da86150", 2032),
    "mir_yelp/evaluations/human/content_preservation/CAAE_rho_0_5.npy": ("0ad472bdbcf89bc8530a51334ddea17629327053e002f2dda7914474e7339a87", 2032),
    "mir_yelp/evaluations/human/content_preservation/CAAE_rho_1.npy": ("91de004809382cbf0f3a4929c4b4f6a1485007a7a2d98046ceea18a7fc20581d", 2032),
    "mir_yelp/evaluations/human/content_preservation/CAAE_rho_5.npy": ("78eacdda111de99f08f2c9ed3a2f79d55284239095bffaa327b1000295bb294b", 2032),
    "mir_yelp/evaluations/human/content_preservation/DAR_gamma_0_1.npy": ("352c2456e3ecbc2d9ecfae968d96aecaababee829a58be35c5c8eb61b527bb1d", 2032),
    "mir_yelp/evaluations/human/content_preservation/DAR_gamma_1.npy": ("21ba763b72746d227c4603513fa8f99436900484f4ab111f77563a13a9f5bce1", 2032),
    "mir_yelp/evaluations/human/content_preservation/DAR_gamma_15.npy": ("cd1cb531adab170d58f283bf2fd36893af46127cd0e3cefb50bd42dd9cdb8977", 2032),
    "mir_yelp/evaluations/human/content_preservation/DAR_gamma_500.npy": ("3235bc9a81db01df1567f4b42756696f08068a2e94ce98762d312442b239e7b6", 2032),
    "mir_yelp/evaluations/human/naturalness/ARAE_lambda_1.npz": ("973c524a640eb7ea09060b9ebdd8d38b5ddfc24ba40af9e88ab3091ecef852e3", 3078),
    "mir_yelp/evaluations/human/naturalness/ARAE_lambda_10.npz": ("a2be128c6141a6f9cd22697d2c6f0ba6d4d12186cadd25b0b3e2c0d4d48c6a19", 3098),
    "mir_yelp/evaluations/human/naturalness/ARAE_lambda_5.npz": ("7809124478509aa5f2a9c70443c51d0d053d2a16b54079379fd00109ba60c1c0", 3091),
    "mir_yelp/evaluations/human/naturalness/CAAE_rho_0_01.npz": ("3a614db4e755fdb8c21dd9dc734a0b477018990beabd80f50f39de9e4cbf8ce9", 3071),
    "mir_yelp/evaluations/human/naturalness/CAAE_rho_0_1.npz": ("4e187a1e07d97c9964fe114bbe318c036b5adfa0937e9607d11c28522e024d34", 3110),
    "mir_yelp/evaluations/human/naturalness/CAAE_rho_0_5.npz": ("880583fe017bf2e7125c4b6525bd233eb11b6bf77314c4d17a62975331c0a5b1", 3109),
    "mir_yelp/evaluations/human/naturalness/CAAE_rho_1.npz": ("e9d698c30727169bfdf26e8fe64239c61d5b758de9745adac04aa85d1d4a0fa0", 3105),
    "mir_yelp/evaluations/human/naturalness/CAAE_rho_5.npz": ("41693cf43e3584b611540026744d964e5c55f8b3c446d9e4e23f3ab6f0a8f3b5", 3108),
    "mir_yelp/evaluations/human/naturalness/DAR_gamma_15.npz": ("490d2334be0a6bf21db6af42cf74ac272ea421288d348a64884ad23fc7796698", 3124),
    "mir_yelp/evaluations/human/naturalness/input_texts.npz": ("59cbb98d96a4466e8238c530188d327bf34919c19202bb95ad15403e7596516b", 2202),
    "mir_yelp/evaluations/human/style_transfer_intensity/ARAE_lambda_1.npy": ("8729fc7d86051f3b417abc8525a963c476b2052b70a84a539218c74167cf11c5", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/ARAE_lambda_10.npy": ("6496982cda219ffb2e01bd10682506deaad0e43ab03d39013b9d3c81ac219aa9", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/ARAE_lambda_5.npy": ("36070ff41b35d8edaaea1f65492465cb404bc858e405ad0df755ed05eba999cb", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/CAAE_rho_0_01.npy": ("61372b6ae30ee72c4c08a1a267ff9cb9151d46269cfc09e9eeb2be76b218bfb9", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/CAAE_rho_0_1.npy": ("9eb046c518556da911fbc631791af89f47ca08b93f9e3bc363acbd354f59528d", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/CAAE_rho_0_5.npy": ("3dd1a183c9392e1c440f8eaef475caecf421f39ca9f2d08e5376730d132404b3", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/CAAE_rho_1.npy": ("35c423b48ad13bdfe8fa087d7ce9be999ae709eb6e93067ff03ef2f24c78fc34", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/CAAE_rho_5.npy": ("e86eb00930508ac24a66a02ae855031f4f7c7a742057c0912dd9d070c21539fa", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/DAR_gamma_0_1.npy": ("1cf7d3c805c7caca0fa13615924cca9cca0fadbbad6a2544a8026c4fb6102f0e", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/DAR_gamma_1.npy": ("8cc5218b7419cfa8f872b2bff05ce19c572e8cf2063f9b973e12e217e8318158", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/DAR_gamma_15.npy": ("e397aeb15ede622cf42f081388fc84b86def709965c7da0033e02325129c35c7", 2032),
    "mir_yelp/evaluations/human/style_transfer_intensity/DAR_gamma_500.npy": ("0dd69c7a28b904106cb8439e9c03128a9d710715772061103022dc4a8907473e", 2032),
    "mir_yelp/transfer_model_outputs/ARAE/lambda_1/sentiment.test.0.tsf": ("ccff031afd7b18de51c725457bb4bb52876cb419896ade3528ed2b399ac0ff31", 5287),
    "mir_yelp/transfer_model_outputs/ARAE/lambda_1/sentiment.test.1.tsf": ("d2dcfae66bc9cc75b6ee9971cd49b984e10d0ef8b25fe33c5b848446f2775f29", 4846),
    "mir_yelp/transfer_model_outputs/ARAE/lambda_10/sentiment.test.0.tsf": ("e498c57c0ef70244c0db668d0e54e30e9082712916d0b687c66890ac5e73a6bb", 5161),
    "mir_yelp/transfer_model_outputs/ARAE/lambda_10/sentiment.test.1.tsf": ("009274490b9844d5f888048b0dc6a685dc82cc111f2f1fbc0f1192b707e34c1a", 4743),
    "mir_yelp/transfer_model_outputs/ARAE/lambda_5/sentiment.test.0.tsf": ("96c3e772f757cfea6278dae13f1c801569af02183cdb195d33000e9297c59d9f", 5056),
    "mir_yelp/transfer_model_outputs/ARAE/lambda_5/sentiment.test.1.tsf": ("8c597caee6b723d7c23af5141d8012074e7cbf4d2a6d5e0a0cb011b24a102132", 4703),
    "mir_yelp/transfer_model_outputs/CAAE/rho_0_01/sentiment.test.0.tsf": ("b038acd18dfc05f6534fc80421d51ca72e7617e4e809f0777fef1cd3f8d20845", 5194),
    "mir_yelp/transfer_model_outputs/CAAE/rho_0_01/sentiment.test.1.tsf": ("dd667406535210abfbd0da8b7def9e7feeec7ac312d727030da142d2014ed518", 5435),
    "mir_yelp/transfer_model_outputs/CAAE/rho_0_1/sentiment.test.0.tsf": ("d894a544ab6542e592dbd37f5187b5443bc93f1f30e6935083b196b73a6e7516", 4781),
    "mir_yelp/transfer_model_outputs/CAAE/rho_0_1/sentiment.test.1.tsf": ("3803c5a4b4d41e6b8eab58e7f6addde7fac8870afb67b5747ee9c169ad1a654e", 5489),
    "mir_yelp/transfer_model_outputs/CAAE/rho_0_5/sentiment.test.0.tsf": ("5de9239eb16990ee8cfee80e15f8e69052b371e1cdd334935072541c8bc6c543", 4567),
    "mir_yelp/transfer_model_outputs/CAAE/rho_0_5/sentiment.test.1.tsf": ("e094959f6958242629ad440fe07a87e34b607d70f1925c99ddbc6daf2467391c", 5362),
    "mir_yelp/transfer_model_outputs/CAAE/rho_1/sentiment.test.0.tsf": ("2a111306997659dd4b621a8726e8a302be4fea930f126200a37691f7cb4061e0", 4449),
    "mir_yelp/transfer_model_outputs/CAAE/rho_1/sentiment.test.1.tsf": ("b28f853f0eb2c29456a496d2e23797fa51927fd86d9bf4fa73d82e9197e0ec69", 5121),
    "mir_yelp/transfer_model_outputs/CAAE/rho_5/sentiment.test.0.tsf": ("1e696191018f32f4b9783db1fb7bbddc0ca4b170072c7e5e97f7edc676e7c6e1", 4095),
    "mir_yelp/transfer_model_outputs/CAAE/rho_5/sentiment.test.1.tsf": ("a6f8ae77143632cb58e5b2b1650d9023cea17c9073e321878f66297a349b0fb0", 4819),
    "mir_yelp/transfer_model_outputs/DAR/gamma_0_1/sentiment.test.0.tsf": ("6e26fe432724539204cba639b56ef35aa01a9b51ed78915d4f45e6cbb63ab6a8", 7367),
    "mir_yelp/transfer_model_outputs/DAR/gamma_0_1/sentiment.test.1.tsf": ("e40e6c78c758458b338e87c6ca2a8e4ecc8eddfc26012bc43835a5d8a6663c62", 6436),
    "mir_yelp/transfer_model_outputs/DAR/gamma_1/sentiment.test.0.tsf": ("80d3ac6991dc2c2d7756f85caf2ff900cbc074176b3eef3253ffa79dd60dfa58", 7379),
    "mir_yelp/transfer_model_outputs/DAR/gamma_1/sentiment.test.1.tsf": ("ddc3657547bac3ac92368b1652a5e8f38fe939b2b4c52a2ed6ff2e68e39e2eef", 6722),
    "mir_yelp/transfer_model_outputs/DAR/gamma_15/sentiment.test.0.tsf": ("d4cb414698305f10732f9ce9241dc88c3ab90c695798d9b7a5ca70f1e644c93f", 7412),
    "mir_yelp/transfer_model_outputs/DAR/gamma_15/sentiment.test.1.tsf": ("ef706537898570f4be896125f42bd6d2c090379bff4bf6ea32bdd0bce67cacb1", 6474),
    "mir_yelp/transfer_model_outputs/DAR/gamma_500/sentiment.test.0.tsf": ("4a92b0a003fc6e3bd795d04709ac62ebbd78561ba655d58b57b6a8c99687cdfd", 7348),
    "mir_yelp/transfer_model_outputs/DAR/gamma_500/sentiment.test.1.tsf": ("e99e026abc388dba96f03ed365399bae8cdd4feb91c29c1b96c34dd7a3496277", 6090),
    "stel/Data/STEL/characteristics/quad_questions_char_contraction.tsv": ("780e114f7dff2116962e9cb10f1b700bc979bb6cd1df915608f2926be391315d", 88357),
    "stel/Data/STEL/characteristics/quad_questions_char_emotives.tsv": ("a428881f5f1f965aedbb9c8eae817b64b41755578fb0f374ccffb7d1c1ba89ba", 82609),
    "stel/Data/STEL/characteristics/quad_questions_char_substitution.tsv": ("e31547b2ca101b1fe5bf81adee457e0bae57b748f7d175a4b4a9903449be24a7", 45661),
    "stel/Data/STEL/characteristics/quad_questions_em-subj-pronoun_100.tsv": ("18a00a33375a1ca168c5022812b4353c61298529bf6ade136cade36f2f35d035", 56613),
    "stel/Data/STEL/dimensions/quad_stel-dimension_formal-100_sample.tsv": ("94c4461e15f3f9bb5e7c1a263508a36471bdb698839c193bf9b538af021b6953", 27333),
    "stel/Data/STEL/dimensions/quad_stel-dimension_simple-100_sample.tsv": ("eedf3474d8220db9e6f0a0fd7a3df1ff238b8295405633f34cc766a79dbe52ab", 50838),
    "stel/LICENSE": ("fd6822088d45ab1ddeea308201c3020f53d113866f900d8d9a77eb644f501bc2", 1217),
    "style_gap_testset/LICENSE": ("98c3442805e6e65665136b59a9cb4dff515f717281108677c782a44953524baa", 17644),
    "style_gap_testset/data/syntest_anno1.csv": ("d204e15f82d0c2fd4f8c657b305c907a21317b71f21ca03b5a0beb7e4a5e1eba", 17287),
    "style_gap_testset/data/syntest_anno2.csv": ("f834d957f650dd0551c53eb26d43cd916deb3f2005b63b691b6409d9c832801d", 16238),
    "style_gap_testset/data/syntest_anno3.csv": ("55852e7e3ce3fac6590d7685449f037a9477ea161ed389f72d50b1b464e66edf", 30593),
    "style_gap_testset/data/syntest_anno4.csv": ("3c257157926002d3ca0f1de4c102c7b5edd252d15de26537b1066abd86a93d75", 28340),
    "style_gap_testset/data/syntest_anno5.csv": ("51c39d292078953dae46901a889b579e98767af2e7cf84862ea257b902027bbe", 39642),
    "style_gap_testset/data/syntest_anno6.csv": ("6c38949fd4f915d15550d588fb66003c0a5b7e46a0bd40a09a6f1d8250093679", 30561),
    "ziegenbein_appropriateness/src/annotation-interface/appropriateness-study-abs/data/study_pairs.csv": ("a598767ec8f6ec384c96e90e1efa80b04bc44a9f59b9d94ad83888286d3f8687", 1277121),
}

GIT_BLOB_SHA1: dict[str, str] = {
    # Not in the shared mirror; blob id from the source repository at the pinned commit.
    "ziegenbein_appropriateness/data/style-transfer/study_results/study_abs_results.csv": (
        "d28ba51c897512601ee186d61e6bd4a755b255d9"
    ),
}


EXTRA_SHA256: dict[str, tuple[str, int]] = {
    # not in the mirror README's table: pinned from the mirror's copy of the same STEL commit
    "stel/Data/Experiment-Results/models/STEL_single-preds_all-models.tsv": (
        "1f405f72dc311e4acb9eabd6fc9f988299f09467bf0798df5918d42d85affbcb", 159847),
}
"""Files the project pins beyond the mirror README's table (the authors' published STEL predictions)."""
