3deepspeed --hostfile hostfile --master_port 29500 train.py --deepspeed --deepspeed_config ds_full.json
